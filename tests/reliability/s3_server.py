"""moto's S3 server, started with a bucket and its objects already in place.

moto keeps its objects in memory: a killed server comes back empty, unlike a real
object store, whose data outlives its processes. ``Stack.s3_restart`` saves the bucket
to a folder before the kill and starts this module with it, so the restarted server
listens only once it holds what the store held::

    python -m tests.reliability.s3_server PORT BUCKET [FOLDER]

FOLDER holds one file per object, named by its key, ``/`` as ``%2F``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import unquote


def _restore(bucket: str, folder: Path | None) -> None:
    import boto3
    from moto import mock_aws

    mock = mock_aws()
    mock.start()
    try:
        client = boto3.client(
            "s3",
            region_name="us-east-1",
            aws_access_key_id="restore",
            aws_secret_access_key="restore",
        )
        client.create_bucket(Bucket=bucket)
        for path in sorted(folder.iterdir()) if folder else []:
            client.put_object(Bucket=bucket, Key=unquote(path.name), Body=path.read_bytes())
    finally:
        mock.stop(remove_data=False)  # the server below serves what was put


def main(argv: list[str]) -> None:
    port, bucket = argv[0], argv[1]
    _restore(bucket, Path(argv[2]) if len(argv) > 2 else None)
    from moto.server import main as moto_main

    moto_main(["-H", "127.0.0.1", "-p", port])


if __name__ == "__main__":
    main(sys.argv[1:])
