"""A hub user over HTTP: logged in through the hub's form, then holding an API token of their own."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from http.cookiejar import CookieJar
from urllib.parse import urlencode


class HubUser:
    """One user of the hub at ``base``: ``get`` pages of their server, start and stop it."""

    def __init__(self, base: str, name: str, password: str, timeout: float = 60):
        self.base, self.name, self.timeout = base, name, timeout
        jar = CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        self.opener.open(f"{base}/hub/login", timeout=timeout).read()
        xsrf = next(c.value for c in jar if c.name == "_xsrf")
        form = urlencode({"username": name, "password": password, "_xsrf": xsrf}).encode()
        self.opener.open(urllib.request.Request(f"{base}/hub/login", data=form), timeout=timeout).read()
        # the login starts a new session, and the hub's XSRF token is tied to the session: take the new one
        self.opener.open(f"{base}/hub/home", timeout=timeout).read()
        xsrf = next(c.value for c in jar if c.name == "_xsrf" and c.path == "/hub/")  # not the user server's
        reply = self.opener.open(
            urllib.request.Request(
                f"{base}/hub/api/users/{name}/tokens",
                data=json.dumps({"note": "hub test", "expires_in": 3600}).encode(),
                headers={"X-XSRFToken": xsrf, "Content-Type": "application/json"},
            ),
            timeout=timeout,
        )
        self.token = json.loads(reply.read())["token"]

    def request(self, path: str, method: str = "GET", body: dict | None = None) -> tuple[int, str]:
        """(status, body) of ``path`` (under the hub's address) with this user's token; errors are answers too."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.base}{path}", data=data, method=method, headers={"Authorization": f"token {self.token}"}
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as reply:
                return reply.status, reply.read().decode(errors="replace")
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(errors="replace")

    def get(self, path: str) -> tuple[int, str]:
        """A page or API answer of this user's own server: ``path`` under /user/NAME."""
        return self.request(f"/user/{self.name}{path}")

    def server(self) -> dict | None:
        """The hub's record of this user's server, None while there is none."""
        status, body = self.request(f"/hub/api/users/{self.name}")
        assert status == 200, body
        return json.loads(body)["servers"].get("")

    def wait(self, ready: bool) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            server = self.server()
            if bool(server and server["ready"]) if ready else server is None:
                return
            time.sleep(0.5)
        raise AssertionError(
            f"the server of {self.name} is not {'ready' if ready else 'stopped'} after {self.timeout} s"
        )

    def start(self) -> None:
        if self.server() is None:
            status, body = self.request(f"/hub/api/users/{self.name}/server", "POST")
            assert status in (201, 202), (status, body)
        self.wait(ready=True)

    def stop(self) -> None:
        if self.server() is not None:
            status, body = self.request(f"/hub/api/users/{self.name}/server", "DELETE")
            assert status in (202, 204), (status, body)
        self.wait(ready=False)
