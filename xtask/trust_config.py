"""Writes a Sigstore ClientTrustConfig (JSON) for kwctl and policy-server to
verify offline (--sigstore-trust-config): the production trusted root and
signing config that ship inside the PyPI package `sigstore`.

usage: python trust_config.py OUTPUT
"""

import json
import pathlib
import sys

import sigstore

STORE = pathlib.Path(sigstore.__file__).parent / "_store" / "https%3A%2F%2Ftuf-repo-cdn.sigstore.dev"


def main(output: str) -> None:
    config = {
        "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
        "trustedRoot": json.loads((STORE / "trusted_root.json").read_text()),
        "signingConfig": json.loads((STORE / "signing_config.v0.2.json").read_text()),
    }
    pathlib.Path(output).write_text(json.dumps(config))


if __name__ == "__main__":
    main(sys.argv[1])
