"""Where the dashboard may send requests (HEADROOM_OUTBOUND_NETWORKS), tried as the attacker: a
fleet manager (or an administrator, for a node's dcgm-exporter) who types addresses meant to make
the web host reach its own loopback, the cloud metadata address or the networks behind it.

Traffic leaves only for 127.0.0.0/8. The names below are answered by the test's resolver (never a
DNS server), and every connection passes a trap that fails the test instead of letting one go to
another address: a refused address is refused before anything is sent.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.test import Client

from benchmarks.models import Endpoint
from benchmarks.security import outbound
from runner.engine import process
from tests.dashboard.test_catalog import client_for, person
from tests.dashboard.test_endpoints import register, register_data
from tests.dashboard.test_node_price import price_form
from tests.listener import Listener
from tests.rows import make_node

pytestmark = pytest.mark.django_db

# As a form shows it: the one answer for every address the dashboard will not or cannot reach.
ONE_MESSAGE = f"{outbound.UNREACHABLE[:1].upper()}{outbound.UNREACHABLE[1:]}."


class Resolver:
    """The test's DNS: each name's answers in turn (the last one repeats), as a server someone
    controls may answer differently from one lookup to the next. A number, or localhost, goes to
    the system resolver, which reads those without a query; any other name does not resolve."""

    def __init__(self) -> None:
        self.answers: dict[str, list[list[str]]] = {}
        self.attempts: list[tuple[str, int]] = []  # connections the trap stopped
        self._getaddrinfo = socket.getaddrinfo
        self._create_connection = socket.create_connection

    def answer(self, name: str, *addresses: str) -> None:
        self.answers.setdefault(name, []).append(list(addresses))

    def getaddrinfo(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        host = host.decode() if isinstance(host, bytes) else host
        flags = kwargs.get("flags", args[3] if len(args) > 3 else 0)
        if flags & socket.AI_NUMERICHOST:  # a number, read without asking anyone
            return self._getaddrinfo(host, port, *args, **kwargs)
        if host in self.answers:
            queue = self.answers[host]
            addresses = queue.pop(0) if len(queue) > 1 else queue[0]
            return [self._entry(address, int(port or 0)) for address in addresses]
        if host == "localhost" or _numeric(host):
            return self._getaddrinfo(host, port, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def create_connection(self, address: tuple[str, int], *args: Any, **kwargs: Any) -> Any:
        resolved = {info[4][0] for info in self.getaddrinfo(address[0], address[1])}
        if not all(ipaddress.ip_address(ip) in ipaddress.ip_network("127.0.0.0/8")
                   for ip in resolved):
            self.attempts.append(address)
            raise OSError("test trap: no connection leaves 127.0.0.0/8")
        return self._create_connection(address, *args, **kwargs)

    @staticmethod
    def _entry(address: str, port: int) -> tuple[Any, ...]:
        if ":" in address:
            return (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))
        return (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))


def _numeric(host: str) -> bool:
    try:
        socket.getaddrinfo(host, None, flags=socket.AI_NUMERICHOST)
    except socket.gaierror:
        return False
    return True


@pytest.fixture
def dns(monkeypatch) -> Resolver:
    resolver = Resolver()
    monkeypatch.setattr(socket, "getaddrinfo", resolver.getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", resolver.create_connection)
    return resolver


@pytest.fixture
def fleet() -> Client:
    return client_for(person("rogue", "Fleet manager"))


@pytest.fixture
def administrator() -> Client:
    return client_for(person("admin", "Administrator"))


@pytest.fixture
def listener() -> Iterator[Listener]:
    """A server on the web host's own loopback: what a refused check must never reach."""
    with Listener() as server:
        yield server


def check(client: Client, endpoint: Endpoint) -> Endpoint:
    client.post(f"/catalog/endpoints/{endpoint.pk}/check/")
    endpoint.refresh_from_db()
    return endpoint


def note_for_refusal(endpoint: Endpoint) -> str:
    return (f"{outbound.UNREACHABLE} (from the dashboard's host; runs go from "
            f"{endpoint.node.queue}'s worker, which must reach it too)")


# ---------------------------------------------------------------------------------------------
# What a form accepts as typed
# ---------------------------------------------------------------------------------------------


def test_production_allows_public_addresses_only_unless_told(settings):
    # The test settings are production's; this module changes them only where it says so.
    assert settings.HEADROOM_OUTBOUND_NETWORKS == ["public"]


REFUSED_AS_TYPED = [
    "http://127.0.0.1:8000", "http://localhost:8000", "http://LOCALHOST.:8000",
    "http://169.254.169.254", "http://[fe80::1]:8000", "http://2130706433:8000",
    "http://0x7f.0.0.1:8000", "http://127.1:8000", "http://[::1]:8000",
    "http://[::ffff:127.0.0.1]:8000", "http://0.0.0.0:8000", "http://10.0.0.5:8000",
    "http://192.168.1.20:8000", "http://100.64.0.1:8000", "http://[64:ff9b::a9fe:a9fe]:80",
]


@pytest.mark.parametrize("url", REFUSED_AS_TYPED)
def test_an_endpoint_typed_as_loopback_link_local_private_or_a_bare_number_is_refused(fleet, url):
    response = fleet.post("/catalog/endpoints/new/", register_data(url))
    assert response.status_code == 400
    assert response.context["form"].errors["base_url"] == [ONE_MESSAGE]
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("url", REFUSED_AS_TYPED)
def test_a_dcgm_exporter_typed_as_loopback_link_local_private_or_a_bare_number_is_refused(
    administrator, url
):
    node = make_node("gpu-a")
    response = administrator.post(f"/catalog/nodes/{node.pk}/edit/",
                                  price_form(dcgm_exporter_url=f"{url}/metrics"))
    assert response.status_code == 400
    assert response.context["form"].errors["dcgm_exporter_url"] == [ONE_MESSAGE]
    node.refresh_from_db()
    assert node.dcgm_exporter_url == ""


def test_a_fleets_private_range_is_accepted_once_it_is_named(settings, fleet, administrator):
    settings.HEADROOM_OUTBOUND_NETWORKS = ["public", "10.20.0.0/16"]
    assert register(fleet, "http://10.20.3.4:8000").base_url == "http://10.20.3.4:8000"
    node = make_node("gpu-a")
    response = administrator.post(f"/catalog/nodes/{node.pk}/edit/",
                                  price_form(dcgm_exporter_url="http://10.20.3.4:9400/metrics"))
    assert response.status_code == 302
    refused = fleet.post("/catalog/endpoints/new/",
                         register_data("http://10.21.0.1:8000", name="next-door"))
    assert refused.context["form"].errors["base_url"] == [ONE_MESSAGE]


# ---------------------------------------------------------------------------------------------
# What "check now" connects to
# ---------------------------------------------------------------------------------------------


def test_check_now_refuses_names_and_numbers_that_stand_for_the_web_hosts_networks(
    fleet, dns, listener
):
    port = listener.base_url.rsplit(":", 1)[1]
    dns.answer("metadata.rogue.test", "169.254.169.254")
    dns.answer("loopback.rogue.test", "127.0.0.1")
    dns.answer("office.rogue.test", "10.1.2.3")
    dns.answer("mapped.rogue.test", "::ffff:127.0.0.1")
    dns.answer("mixed.rogue.test", "93.184.215.14", "127.0.0.1")  # one bad answer is enough
    endpoints = [register(fleet, f"http://{name}.rogue.test:{port}", name=name)
                 for name in ("metadata", "loopback", "office", "mapped", "mixed")]
    # A row that names a bare number, as saved before the form refused one.
    decimal = register(fleet, f"http://loopback.rogue.test:{port}", name="decimal")
    Endpoint.objects.filter(pk=decimal.pk).update(base_url=f"http://2130706433:{port}")

    for endpoint in [*endpoints, decimal]:
        checked = check(fleet, endpoint)
        assert checked.check_ok is False, endpoint.name
        assert checked.check_note == note_for_refusal(checked), endpoint.name
    assert listener.requests == []  # the key and headers registered never left
    assert dns.attempts == []


def test_refused_silent_redirected_unresolved_and_forbidden_addresses_read_the_same(
    settings, fleet, dns, monkeypatch
):
    settings.HEADROOM_OUTBOUND_NETWORKS = ["127.0.0.1/32"]
    monkeypatch.setattr(process, "HTTP_TIMEOUT_S", 0.5)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    silent = socket.socket()  # accepts connections into its backlog, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    with Listener("127.0.0.2") as elsewhere, \
            Listener(redirect_to=elsewhere.base_url) as redirecting, Listener() as healthy:
        dns.answer("other-loopback.rogue.test", "127.0.0.2")
        dns.answer("metadata.rogue.test", "169.254.169.254")
        cases = {
            "refused": f"http://127.0.0.1:{closed_port}",
            "silent": f"http://127.0.0.1:{silent.getsockname()[1]}",
            "redirected": redirecting.base_url,
            "unresolved": "http://nowhere.rogue.test:8000",
            "forbidden": elsewhere.base_url.replace("127.0.0.2", "other-loopback.rogue.test"),
            "metadata": "http://metadata.rogue.test",
        }
        notes = {name: check(fleet, register(fleet, url, name=name)).check_note
                 for name, url in cases.items()}
        allowed = check(fleet, register(fleet, healthy.base_url, name="allowed"))
    silent.close()
    assert set(notes.values()) == {note_for_refusal(allowed)}, notes
    assert redirecting.requests and elsewhere.requests == []  # the redirect was not followed
    assert allowed.check_ok is True and "serves fake-model" in allowed.check_note
    assert {"/health", "/v1/models"} <= {path for path, _ in healthy.requests}
    assert dns.attempts == []


def test_a_connection_goes_to_the_address_that_was_checked_not_to_a_second_answer(
    settings, dns, listener
):
    settings.HEADROOM_OUTBOUND_NETWORKS = ["127.0.0.1/32"]
    port = listener.base_url.rsplit(":", 1)[1]
    # DNS rebinding: allowed when looked up, the metadata address on every later lookup.
    dns.answer("rebind.rogue.test", "127.0.0.1")
    dns.answer("rebind.rogue.test", "169.254.169.254")
    with httpx.Client(transport=outbound.GuardedTransport()) as client:
        response = client.get(f"http://rebind.rogue.test:{port}/health")
    assert response.status_code == 200
    ((path, headers),) = listener.requests
    assert path == "/health" and headers["Host"] == f"rebind.rogue.test:{port}"
    assert dns.attempts == []


def test_an_allowed_range_is_reached_at_its_checked_address_under_its_own_name(settings, dns):
    settings.HEADROOM_OUTBOUND_NETWORKS = ["10.0.0.0/8"]
    dns.answer("gpu-a.fleet.test", "10.1.2.3")
    dns.answer("metadata.rogue.test", "169.254.169.254")
    sent: list[httpx.Request] = []

    def server(request: httpx.Request) -> httpx.Response:
        sent.append(request)  # in place of the network: nothing leaves this process
        if request.url.path == "/moved":
            return httpx.Response(302, headers={"Location": "http://169.254.169.254/"})
        return httpx.Response(200)

    transport = outbound.GuardedTransport(inner=httpx.MockTransport(server))
    with httpx.Client(transport=transport) as client:
        assert client.get("https://gpu-a.fleet.test:8443/health").status_code == 200
        with pytest.raises(outbound.Refused):
            client.get("https://gpu-a.fleet.test:8443/moved")
        with pytest.raises(outbound.Refused):
            client.get("http://metadata.rogue.test/latest/meta-data/")
    first = sent[0]
    assert (first.url.host, first.url.port) == ("10.1.2.3", 8443)
    assert first.headers["Host"] == "gpu-a.fleet.test:8443"
    assert first.extensions["sni_hostname"] == "gpu-a.fleet.test"  # the certificate's name
    assert [request.url.path for request in sent] == ["/health", "/moved"]


@pytest.mark.parametrize(
    ("networks", "address", "allowed"),
    [(["public"], "93.184.215.14", True), (["public"], "127.0.0.1", False),
     (["public"], "169.254.169.254", False), (["public"], "10.1.2.3", False),
     (["public"], "::1", False), (["public"], "fe80::1", False),
     (["public"], "::ffff:127.0.0.1", False), (["public"], "64:ff9b::7f00:1", False),
     (["public"], "2002:7f00:1::", False), (["public"], "224.0.0.1", False),
     (["10.0.0.0/8"], "::ffff:10.1.2.3", True), (["10.0.0.0/8"], "93.184.215.14", False),
     ([], "93.184.215.14", False)],
)
def test_an_address_is_allowed_by_the_networks_named_and_public_by_its_kind(
    settings, networks, address, allowed
):
    settings.HEADROOM_OUTBOUND_NETWORKS = networks
    assert outbound.allowed(ipaddress.ip_address(address)) is allowed
