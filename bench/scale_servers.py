"""Servers and probes of the scale bench: a private Redis, its memory peak, and the memory
Flower's event state takes for a number of tasks."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path


class Redis:
    def __init__(self, workdir: Path) -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(workdir)], stdout=subprocess.DEVNULL)
        import redis

        self.client = redis.Redis(port=self.port)
        for _ in range(200):
            try:
                self.client.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def used(self) -> int:
        return int(self.client.info("memory")["used_memory"])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


class MemoryPeak(threading.Thread):
    """Polls Redis ``used_memory`` twice a second; ``peak`` is the largest seen."""

    def __init__(self, redis: Redis) -> None:
        super().__init__(daemon=True)
        self.redis, self.peak, self.stop_flag = redis, 0, threading.Event()

    def run(self) -> None:
        while not self.stop_flag.wait(0.5):
            self.peak = max(self.peak, self.redis.used())


def flower_memory(tasks: int, max_tasks: int) -> float:
    """MB Flower's event state grows by after ``tasks`` tasks (received/started/succeeded),
    with ``max_tasks`` in memory; measured in a child process."""
    code = f"""
import time, uuid, resource
from flower.events import EventsState
st = EventsState(max_tasks_in_memory={max_tasks})
def rss():
    return int(open('/proc/self/statm').read().split()[1]) * 4096 / 1e6
r0 = rss(); now = time.time()
for i in range({tasks}):
    u = str(uuid.uuid4()); base = {{'uuid': u, 'hostname': 'w@h', 'timestamp': now,
        'local_received': now, 'clock': i, 'pid': 1}}
    st.event({{**base, 'type': 'task-received', 'name': 'onsei.asr.process_shard',
              'args': '[%d]' % i, 'kwargs': "{{'until': 'tokenize'}}", 'retries': 0}})
    st.event({{**base, 'type': 'task-started'}})
    st.event({{**base, 'type': 'task-succeeded', 'result': "{{'shard_id': %d}}" % i,
              'runtime': 0.01}})
print(rss() - r0)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=1800)
    return float(out.stdout.strip().splitlines()[-1])
