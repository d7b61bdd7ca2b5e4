#!/usr/bin/env python3
"""Seed corpora for the fuzz targets from examples/ and ../shared/corpus.

Writes fuzz/corpus/<target>/ (not committed): admission payloads for
validate_payload, settings for settings_payload, image references for
image_reference and patterns for windows_images_glob.
"""
import hashlib
import json
import os
import struct
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "corpus")


def write(target, data):
    folder = os.path.join(OUT, target)
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]


def arbitrary_str_pair(a, b):
    # arbitrary's (&str, &str): first a length-prefixed string, the last takes the rest.
    first = a.encode()
    return struct.pack("<I", len(first)) + first + b.encode()


def images(obj, found):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "image" and isinstance(v, str):
                found.add(v)
            else:
                images(v, found)
    elif isinstance(obj, list):
        for v in obj:
            images(v, found)


def published_seeds():
    """List answers of the published facts, as `os-placement facts render -o json`
    writes them for the cluster fixtures and the published example (the CLI
    `make build` built; none without it)."""
    cli = os.path.join(ROOT, "target", "release", "os-placement")
    if not os.access(cli, os.X_OK):
        print("published_answer: no seeds, run `make build` first")
        return
    clusters = os.path.join(ROOT, "e2e", "clusters")
    inputs = [[os.path.join(clusters, c, f) for f in sorted(os.listdir(os.path.join(clusters, c)))]
              for c in sorted(os.listdir(clusters)) if os.path.isdir(os.path.join(clusters, c))]
    inputs.append([os.path.join(ROOT, "door", "tests", "inputs", "published.yaml")])
    for files in inputs:
        rendered = subprocess.run([cli, "facts", "render", "-o", "json", *files],
                                  check=True, capture_output=True).stdout
        write("published_answer", rendered)
        items = json.loads(rendered)["items"]
        for item in items[1:]:
            write("published_answer", json.dumps({"items": [items[0], item]}).encode())


def main():
    settings = []
    for name in sorted(os.listdir(os.path.join(ROOT, "examples", "settings"))):
        for doc in docs(os.path.join(ROOT, "examples", "settings", name)):
            settings.append(doc)
            write("settings_payload", json.dumps(doc).encode())
            for rule in doc.get("windowsImages") or []:
                pattern = rule.get("pattern", "") if isinstance(rule, dict) else ""
                write("windows_images_glob", arbitrary_str_pair(pattern, pattern))
    manifests = [os.path.join(ROOT, "examples", "manifests", n)
                 for n in sorted(os.listdir(os.path.join(ROOT, "examples", "manifests")))]
    if os.path.isdir(SHARED):
        manifests += [os.path.join(SHARED, n) for n in sorted(os.listdir(SHARED))
                      if n.endswith((".yaml", ".yml"))]
    found = set()
    for i, path in enumerate(manifests):
        for obj in docs(path):
            images(obj, found)
            kind = obj.get("kind", "Pod")
            request = {"uid": "seed", "kind": {"kind": kind}, "operation": "CREATE",
                       "object": obj}
            chosen = settings[i % len(settings)] if settings else {}
            write("validate_payload",
                  json.dumps({"request": request, "settings": chosen}).encode())
    for image in sorted(found):
        write("image_reference", arbitrary_str_pair(image, "*windows*"))
    published_seeds()
    # Inputs that once failed, replayed first (fuzz/regressions/<target>/).
    regressions = os.path.join(ROOT, "fuzz", "regressions")
    for target in sorted(os.listdir(regressions)):
        for name in sorted(os.listdir(os.path.join(regressions, target))):
            with open(os.path.join(regressions, target, name), "rb") as f:
                write(target, f.read())
    counts = {t: len(os.listdir(os.path.join(OUT, t))) for t in sorted(os.listdir(OUT))}
    print("seeds:", counts)


if __name__ == "__main__":
    main()
