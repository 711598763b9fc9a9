"""A real ``redis-server`` on a free loopback port, for tests and benchmarks.

No mocks: the tests need Redis's own atomicity. ``.ci/run`` installs Debian's ``redis-server``
when it is missing, so a missing binary is a failure here, never a skip.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_cluster_port() -> int:
    """A free port whose cluster bus port (10,000 above) is free too, so at most 55535."""
    for _ in range(200):
        port = random.randint(20000, 55000)
        try:
            for candidate in (port, port + 10000):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair for a Redis cluster node")


class RedisServer:
    """One ``redis-server`` process; ``stop()`` and ``start()`` again keep its port and data
    (with ``appendonly``, what was written before a restart is there after it)."""

    def __init__(
        self, directory: Path, *, appendonly: bool = False, extra: tuple[str, ...] = ()
    ) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "redis-server not found: install it (Debian: apt-get install redis-server; "
                ".ci/run does this)"
            )
        self.binary = binary
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.appendonly = appendonly
        self.extra = extra
        self.port = free_cluster_port() if "--cluster-enabled" in extra else free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        args = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", "always",
            "--dir", str(self.directory),
            "--daemonize", "no",
            "--protected-mode", "no",
            "--loglevel", "warning",
            "--logfile", str(self.directory / "redis.log"),
            *self.extra,
        ]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = (self.directory / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}: {log}")
            if self.ping():
                return self
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"redis-server did not answer PING on port {self.port} within 10 s")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: redis-server flushes the AOF and exits
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RedisClusterServers:
    """A real Redis Cluster: three ``redis-server --cluster-enabled yes`` masters on free
    loopback ports, joined by ``redis-cli --cluster create``. ``url`` names one node and asks
    for a cluster client (scrapy_neardup.storage.redis_client.connect)."""

    def __init__(self, directory: Path, nodes: int = 3) -> None:
        self.servers = [
            RedisServer(
                Path(directory) / f"node{i}",
                extra=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
            )
            for i in range(nodes)
        ]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.servers[0].port}/0?cluster=true"

    def start(self) -> RedisClusterServers:
        for server in self.servers:
            server.start()
        cli = shutil.which("redis-cli")
        if cli is None:
            raise RuntimeError("redis-cli not found (Debian: apt-get install redis-tools)")
        nodes = [f"127.0.0.1:{server.port}" for server in self.servers]
        run = subprocess.run(
            [cli, "--cluster", "create", *nodes, "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if run.returncode != 0:
            self.stop()
            raise RuntimeError(f"redis-cli --cluster create failed: {run.stdout}{run.stderr}")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # every node agrees that every slot is served
            states = [
                subprocess.run(
                    [cli, "-p", str(server.port), "cluster", "info"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                ).stdout
                for server in self.servers
            ]
            if all("cluster_state:ok" in state for state in states):
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("the Redis cluster did not reach cluster_state:ok within 30 s")

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def __enter__(self) -> RedisClusterServers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Stats:
    """Just enough of Scrapy's stats collector for a state used without a crawler."""

    def __init__(self) -> None:
        self.values: Counter[str] = Counter()

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] += count

    def set_value(self, key: str, value: int) -> None:
        self.values[key] = value


def redis_state(server: RedisServer, prefix: str = "t", **settings: Any) -> tuple[Any, Stats]:
    """An opened RedisState on ``server`` (no crawler, no extraction) and its stats."""
    from scrapy_neardup.config import NearDupConfig
    from scrapy_neardup.state.redis import RedisState

    config = NearDupConfig.from_settings(
        {
            "NEARDUP_STORAGE": "redis",
            "NEARDUP_REDIS_URL": server.url,
            "NEARDUP_EXTRACT": False,
            "NEARDUP_WORKERS": 0,
            "NEARDUP_MIN_TOKENS": 20,
            "NEARDUP_REDIS_TIMEOUT": 1.0,
            **settings,
        }
    )
    stats = Stats()
    state = RedisState(config, stats, key_prefix=prefix)
    state.open()
    return state, stats
