"""The launch form's output-parity switch: into the plan for a preset or a custom workload,
refused when sampling, and back onto the form from a downloaded plan."""

from __future__ import annotations

import pytest

from benchmarks.models import Benchmark, Workload

from .test_launch import broker as broker
from .test_launch import form_data
from .test_launch import node as node

pytestmark = pytest.mark.django_db

CUSTOM = {"workload_preset": "custom", "prompt_source": "random", "input_tokens_min": 16,
          "input_tokens_max": 16, "output_tokens": 8, "request_count": 10,
          "endpoint": "completions", "load_shape": "burst", "load_levels": "10",
          "stream": "on", "ignore_eos": "on"}


def test_a_preset_keeps_its_outputs_when_asked(owner_client, node, broker):
    assert owner_client.post("/runs/new/", form_data(node, keep_outputs="on")).status_code == 302
    benchmark = Benchmark.objects.get()
    assert benchmark.plan["workload"]["keep_outputs"] is True
    assert Workload.objects.get().keep_outputs is True


def test_outputs_are_not_kept_unless_asked(owner_client, node, broker):
    assert owner_client.post("/runs/new/", form_data(node)).status_code == 302
    assert Benchmark.objects.get().plan["workload"]["keep_outputs"] is False


def test_parity_while_sampling_is_refused_on_its_field(owner_client, node):
    data = form_data(node, **CUSTOM, temperature="0.8", keep_outputs="on")
    response = owner_client.post("/runs/new/", data)
    assert response.status_code == 400
    assert "only at temperature 0" in response.context["form"].errors["keep_outputs"][0]
    assert not Benchmark.objects.exists()


def test_a_greedy_custom_workload_keeps_its_outputs(owner_client, node, broker):
    data = form_data(node, **CUSTOM, temperature="0", keep_outputs="on")
    assert owner_client.post("/runs/new/", data).status_code == 302
    assert Benchmark.objects.get().plan["workload"]["keep_outputs"] is True


def test_run_again_keeps_the_switch(owner_client, node, broker):
    owner_client.post("/runs/new/", form_data(node, keep_outputs="on"))
    benchmark = Benchmark.objects.get()
    form = owner_client.get(f"/runs/{benchmark.code}/again/").context["form"]
    assert form.initial["keep_outputs"] is True
