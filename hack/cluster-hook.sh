#!/usr/bin/env bash
# CLUSTER_UP_HOOK for `make cluster`: start eval-admission and register it (hack/webhook.sh up DIR).
exec "$(dirname "$0")/webhook.sh" up "$@"
