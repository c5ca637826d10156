import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

from benchmarks.models import Checkpoint, Runtime

pytestmark = pytest.mark.django_db


def test_the_demo_user_command_prints_credentials_that_log_in(capsys):
    call_command("create_demo_user")
    lines = capsys.readouterr().out.splitlines()
    password = next(line.split(": ", 1)[1] for line in lines if "password:" in line)
    assert authenticate(username="demo", password=password) is not None


def test_running_it_again_resets_the_password(capsys):
    call_command("create_demo_user", password="first-password")
    call_command("create_demo_user", password="second-password")
    assert authenticate(username="demo", password="first-password") is None
    assert authenticate(username="demo", password="second-password") is not None


def test_it_refuses_a_weak_password_and_leaves_no_user_behind():
    with pytest.raises(CommandError, match=r"too short\. It must contain at least 12 characters"):
        call_command("create_demo_user", password="x")
    assert not get_user_model().objects.filter(username="demo").exists()


def test_it_keeps_the_old_password_when_the_new_one_is_refused():
    call_command("create_demo_user", password="first-password")
    with pytest.raises(CommandError, match="entirely numeric"):
        call_command("create_demo_user", password="804711358219")
    assert authenticate(username="demo", password="first-password") is not None


def test_it_registers_the_tiny_model_and_the_installed_vllm(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    call_command("create_demo_user", tiny_model=tmp_path)
    checkpoint, runtime = Checkpoint.objects.get(), Runtime.objects.get()
    assert checkpoint.repo == str(tmp_path)
    assert runtime.version  # whatever vLLM this environment has
    assert checkpoint.approved and runtime.approved  # the demo launches them


def test_it_refuses_a_directory_without_a_model(tmp_path):
    with pytest.raises(CommandError, match="holds no model"):
        call_command("create_demo_user", tiny_model=tmp_path)
