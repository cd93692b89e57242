"""``manage.py storage_init``: create the S3 bucket of job files when it does not exist
(docker-compose.yml's storage-init service runs it at every start; any S3-compatible
server). Nothing to do on local storage (MEDIA_ROOT is made when first written)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError
from django.conf import settings
from django.core.files.storage import default_storage
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the S3 bucket of job files (AWS_STORAGE_BUCKET_NAME) if it is missing."

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.AWS_STORAGE_BUCKET_NAME:
            self.stdout.write("storage: local files under MEDIA_ROOT, nothing to create")
            return
        bucket = default_storage.bucket  # type: ignore[attr-defined]  # S3Storage's
        try:
            bucket.meta.client.head_bucket(Bucket=bucket.name)
            self.stdout.write(f"storage: bucket {bucket.name} is there")
            return
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket"):
                raise
        region = settings.AWS_S3_REGION_NAME
        if region and region != "us-east-1":
            bucket.create(CreateBucketConfiguration={"LocationConstraint": region})
        else:
            bucket.create()
        self.stdout.write(f"storage: bucket {bucket.name} created")
