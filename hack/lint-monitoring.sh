#!/usr/bin/env bash
# `make lint-monitoring`: manifests/monitoring checked by Prometheus's own
# promtool (hack/build-promtool.sh builds it once into the cache):
#   1. the PrometheusRule's spec (its groups), written out as a rules file,
#      passes `promtool check rules` with every lint fatal;
#   2. every alert in it has a case in tests/promtool/alerts_test.yaml, and
#      `promtool test rules` passes: each alert fires on the series that should
#      fire it, with its labels and summary, and not on the others;
#   3. every `expr` of manifests/monitoring/grafana-dashboard.json parses as
#      PromQL (each becomes a recording rule for `promtool check rules`, with
#      Grafana's variables given plain values).
# That the alerts and the dashboard read only metrics the server exports is a
# unit test (src/telemetry/monitoring.rs). Needs Go the first time, python3.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MONITORING=$REPO_ROOT/manifests/monitoring
ALERTS_TEST=$REPO_ROOT/tests/promtool/alerts_test.yaml

PROMTOOL=$("$REPO_ROOT/hack/build-promtool.sh" | sed -n 's/^bin=//p')
[[ -x $PROMTOOL ]] || die "hack/build-promtool.sh named no promtool"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The PrometheusRule's spec is a rules file as it stands: the lines under the
# top-level `spec:` key (up to the next top-level key), two spaces less indented.
awk '/^spec:/ { on = 1; next } on && /^[^ #]/ { on = 0 } on { sub(/^  /, ""); print }' \
	"$MONITORING/prometheusrule.yaml" >"$WORK/eval-admission.rules.yaml"
grep -q '^groups:' "$WORK/eval-admission.rules.yaml" || die "no spec.groups in $MONITORING/prometheusrule.yaml"
"$PROMTOOL" check rules --lint=all --lint-fatal "$WORK/eval-admission.rules.yaml"

# An alert without a test case would pass `promtool test rules` untested.
alerts=$(sed -n 's/^ *- alert: *//p' "$WORK/eval-admission.rules.yaml")
[[ -n $alerts ]] || die "no alerts in $MONITORING/prometheusrule.yaml"
for alert in $alerts; do
	grep -q "alertname: $alert\$" "$ALERTS_TEST" || die "no test case for $alert in ${ALERTS_TEST#"$REPO_ROOT"/}"
done
# The test file names the rules file beside it (rule_files: [eval-admission.rules.yaml]).
cp "$ALERTS_TEST" "$WORK/"
(cd "$WORK" && "$PROMTOOL" test rules "$(basename "$ALERTS_TEST")")

# The dashboard's queries, each a recording rule: the real PromQL parser.
python3 - "$MONITORING/grafana-dashboard.json" >"$WORK/dashboard.rules.yaml" <<'EOF'
import json, sys

# Grafana's variables, as the server would see them substituted.
VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "6h", "$namespace": "eval-admission-system",
             "$pod": ".*"}

def panels(items):
    for panel in items:
        yield panel
        yield from panels(panel.get("panels", []))

dashboard = json.load(open(sys.argv[1]))
print("groups:\n- name: grafana-dashboard\n  rules:")
count = 0
for panel in panels(dashboard["panels"]):
    for target in panel.get("targets", []):
        expr = target["expr"]
        for name in sorted(VARIABLES, key=len, reverse=True):
            expr = expr.replace(name, VARIABLES[name])
        if "$" in expr.replace("$1", ""):
            sys.exit(f"panel {panel['title']!r}: a variable left in {expr!r}")
        count += 1
        print(f"  - record: dashboard_expr_{count}\n    expr: {json.dumps(expr)}")
if count == 0:
    sys.exit("no expr in the dashboard")
EOF
"$PROMTOOL" check rules --lint=none "$WORK/dashboard.rules.yaml"
log "manifests/monitoring: rules checked and tested, dashboard queries parsed ($(basename "$PROMTOOL") $("$PROMTOOL" --version | sed -n '1s/.*version \([^ ]*\).*/\1/p'))"
