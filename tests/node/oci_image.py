#!/usr/bin/env python3
"""Write a single-layer OCI image layout as a tar, without Docker.

The output is what `ctr -n k8s.io images import --all-platforms OUT.tar`
(containerd 1.6 and 2.x) imports:

    oci-layout                      {"imageLayoutVersion": "1.0.0"}
    index.json                      one manifest descriptor, with platform and name
    blobs/sha256/<manifest>         config + one gzip layer
    blobs/sha256/<config>           architecture, os, User, Entrypoint, Cmd, ...
    blobs/sha256/<layer>            the files, directories and symlinks given

The output is deterministic: fixed mtimes, owners and modes from the
arguments (never from the host), sorted entries and sorted JSON keys, so the
same inputs give the same manifest digest.

usage: oci_image.py --out OUT.tar --ref registry.local/NAME:TAG
           [--user UID[:GID]] [--entrypoint JSON] [--cmd JSON] [--workdir DIR]
           [--env KEY=VALUE]... [--expose PORT[/PROTO]]...
           [--file SRC:DEST[:MODE[:UID:GID]]]...
           [--dir DEST[:MODE[:UID:GID]]]...
           [--symlink DEST=TARGET]...
           [--inputs-digest]

MODE is octal (default: 0755 if SRC is executable, else 0644; 0755 for
directories); owners default to 0:0. Parent directories not given are added
as 0755 root. --inputs-digest prints a digest of everything the image is made
of (this script, the arguments, the content of every SRC) and writes nothing:
the caller's stamp for "already built".

Standard library only.
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile
from dataclasses import dataclass

# Every timestamp in the image: mtimes in the layer and the output tar, and
# "created" in the config.
EPOCH = 0
CREATED = "1970-01-01T00:00:00Z"
CHUNK = 1 << 20

OCI_LAYOUT = "oci-layout"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
# containerd names the imported image after this annotation (full reference);
# the OCI one carries the tag, as `ctr export` and BuildKit write them.
ANNOTATION_CONTAINERD_NAME = "io.containerd.image.name"
ANNOTATION_REF_NAME = "org.opencontainers.image.ref.name"


@dataclass(frozen=True)
class Entry:
    """One entry of the layer. `path` is relative ("usr/bin/x")."""

    path: str
    kind: str  # "file", "dir" or "symlink"
    mode: int = 0o755
    uid: int = 0
    gid: int = 0
    source: str = ""  # host file, for "file"
    target: str = ""  # link target, for "symlink"


class HashingWriter:
    """A write-only file that hashes and counts what goes through it."""

    def __init__(self, out):
        self.out = out
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data):
        self.sha.update(data)
        self.size += len(data)
        if self.out is not None:
            self.out.write(data)
        return len(data)

    def flush(self):
        if self.out is not None:
            self.out.flush()

    @property
    def digest(self):
        return "sha256:" + self.sha.hexdigest()


def canonical_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_sha256(path):
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def image_path(dest):
    """/usr/bin/x -> usr/bin/x, rejecting paths that leave the root."""
    parts = [p for p in dest.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise SystemExit(f"oci_image.py: bad path in image: {dest!r}")
    return "/".join(parts)


def mode_owner(fields, default_mode):
    """[MODE[:UID:GID]] -> (mode, uid, gid)."""
    if len(fields) not in (0, 1, 3):
        raise SystemExit(f"oci_image.py: expected MODE or MODE:UID:GID, got {':'.join(fields)!r}")
    mode = int(fields[0], 8) if fields and fields[0] else default_mode
    uid, gid = (int(fields[1]), int(fields[2])) if len(fields) == 3 else (0, 0)
    return mode, uid, gid


def parse_entries(files, dirs, symlinks):
    """The layer's entries by path, with the missing parent directories."""
    entries = {}

    def add(entry):
        if entry.path in entries:
            raise SystemExit(f"oci_image.py: /{entry.path} given twice")
        entries[entry.path] = entry

    for spec in files:
        src, dest, *rest = spec.split(":")
        if not os.path.isfile(src):
            raise SystemExit(f"oci_image.py: not a file: {src}")
        default = 0o755 if os.access(src, os.X_OK) else 0o644
        mode, uid, gid = mode_owner(rest, default)
        add(Entry(image_path(dest), "file", mode, uid, gid, source=src))
    for spec in dirs:
        dest, *rest = spec.split(":")
        mode, uid, gid = mode_owner(rest, 0o755)
        add(Entry(image_path(dest), "dir", mode, uid, gid))
    for spec in symlinks:
        dest, sep, target = spec.partition("=")
        if not sep or not target:
            raise SystemExit(f"oci_image.py: expected DEST=TARGET, got {spec!r}")
        add(Entry(image_path(dest), "symlink", 0o777, target=target))

    for path in list(entries):
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            parent = "/".join(parts[:i])
            if parent not in entries:
                entries[parent] = Entry(parent, "dir")
            elif entries[parent].kind != "dir":
                raise SystemExit(f"oci_image.py: /{parent} is a parent of /{path} but not a directory")
    return dict(sorted(entries.items()))


def image_config(args):
    """The "config" object of the image config (Docker/OCI field names)."""
    config = {}
    if args.user:
        config["User"] = args.user
    if args.expose:
        config["ExposedPorts"] = {p if "/" in p else p + "/tcp": {} for p in args.expose}
    if args.env:
        config["Env"] = args.env
    for key, value in (("Entrypoint", args.entrypoint), ("Cmd", args.cmd)):
        if value is None:
            continue
        parsed = json.loads(value)
        if not (isinstance(parsed, list) and all(isinstance(s, str) for s in parsed)):
            raise SystemExit(f"oci_image.py: {key} must be a JSON array of strings, got {value!r}")
        config[key] = parsed
    if args.workdir:
        config["WorkingDir"] = args.workdir
    return config


def tar_info(name, kind, size=0, mode=0o644, uid=0, gid=0, target=""):
    info = tarfile.TarInfo(name)
    info.type = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE}[kind]
    info.size = size
    info.mode = mode
    info.uid, info.gid = uid, gid
    info.uname = info.gname = ""
    info.mtime = EPOCH
    info.linkname = target
    return info


def write_layer(entries, out):
    """Writes the gzip layer to `out`; returns (diff_id, digest, size)."""
    compressed = HashingWriter(out)
    # filename="" and mtime=0: nothing of the host in the gzip header. The
    # compressed bytes (not the diff_id) also depend on the zlib version.
    with gzip.GzipFile(filename="", mode="wb", fileobj=compressed, mtime=EPOCH, compresslevel=6) as gz:
        raw = HashingWriter(gz)
        with tarfile.open(fileobj=raw, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for e in entries.values():
                if e.kind == "file":
                    size = os.path.getsize(e.source)
                    with open(e.source, "rb") as f:
                        tar.addfile(tar_info(e.path, "file", size, e.mode, e.uid, e.gid), f)
                else:
                    tar.addfile(tar_info(e.path, e.kind, 0, e.mode, e.uid, e.gid, e.target))
    return raw.digest, compressed.digest, compressed.size


def inputs_digest(args, entries):
    """Everything the image is made of, for the caller's up-to-date check."""
    spec = {
        "builder": file_sha256(__file__),
        "ref": args.ref,
        "platform": [args.os, args.arch],
        "config": image_config(args),
        "entries": [
            [e.path, e.kind, e.mode, e.uid, e.gid, file_sha256(e.source) if e.source else "", e.target]
            for e in entries.values()
        ],
    }
    return hashlib.sha256(canonical_json(spec)).hexdigest()


def build(args, entries):
    """Writes the image layout tar to args.out; returns the manifest digest."""
    out_dir = os.path.dirname(os.path.abspath(args.out))
    with tempfile.TemporaryFile(dir=out_dir) as layer:
        diff_id, layer_digest, layer_size = write_layer(entries, layer)

        config = canonical_json(
            {
                "created": CREATED,
                "architecture": args.arch,
                "os": args.os,
                "config": image_config(args),
                "rootfs": {"type": "layers", "diff_ids": [diff_id]},
                "history": [{"created": CREATED, "created_by": "tests/node/oci_image.py"}],
            }
        )
        manifest = canonical_json(
            {
                "schemaVersion": 2,
                "mediaType": MEDIA_MANIFEST,
                "config": {"mediaType": MEDIA_CONFIG, "digest": sha256(config), "size": len(config)},
                "layers": [{"mediaType": MEDIA_LAYER, "digest": layer_digest, "size": layer_size}],
            }
        )
        tag = args.ref.rsplit(":", 1)[1] if ":" in args.ref.rsplit("/", 1)[-1] else "latest"
        index = canonical_json(
            {
                "schemaVersion": 2,
                "mediaType": MEDIA_INDEX,
                "manifests": [
                    {
                        "mediaType": MEDIA_MANIFEST,
                        "digest": sha256(manifest),
                        "size": len(manifest),
                        "platform": {"architecture": args.arch, "os": args.os},
                        "annotations": {ANNOTATION_CONTAINERD_NAME: args.ref, ANNOTATION_REF_NAME: tag},
                    }
                ],
            }
        )

        blobs = {
            sha256(config): config,
            sha256(manifest): manifest,
            layer_digest: layer,
        }
        members = {
            "blobs/": None,
            "blobs/sha256/": None,
            "index.json": index,
            OCI_LAYOUT: canonical_json({"imageLayoutVersion": "1.0.0"}),
        }
        for digest, content in blobs.items():
            members["blobs/sha256/" + digest.removeprefix("sha256:")] = content

        tmp = args.out + ".tmp"
        with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, content in sorted(members.items()):
                if content is None:
                    tar.addfile(tar_info(name.rstrip("/"), "dir", mode=0o755))
                elif isinstance(content, bytes):
                    tar.addfile(tar_info(name, "file", len(content)), io.BytesIO(content))
                else:
                    content.seek(0)
                    tar.addfile(tar_info(name, "file", layer_size), content)
        os.replace(tmp, args.out)
    return sha256(manifest)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="the image layout tar to write")
    p.add_argument("--ref", required=True, help="image reference, e.g. registry.local/pause:3.10")
    p.add_argument("--arch", default="amd64")
    p.add_argument("--os", default="linux")
    p.add_argument("--user")
    p.add_argument("--entrypoint", help="JSON array")
    p.add_argument("--cmd", help="JSON array")
    p.add_argument("--workdir")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--expose", action="append", default=[], metavar="PORT[/PROTO]")
    p.add_argument("--file", action="append", default=[], metavar="SRC:DEST[:MODE[:UID:GID]]")
    p.add_argument("--dir", action="append", default=[], metavar="DEST[:MODE[:UID:GID]]")
    p.add_argument("--symlink", action="append", default=[], metavar="DEST=TARGET")
    p.add_argument("--inputs-digest", action="store_true", help="print the digest of the inputs and exit")
    args = p.parse_args(argv)

    entries = parse_entries(args.file, args.dir, args.symlink)
    if args.inputs_digest:
        print(inputs_digest(args, entries))
        return
    if not args.out:
        p.error("--out is required")
    print(build(args, entries))


if __name__ == "__main__":
    main(sys.argv[1:])
