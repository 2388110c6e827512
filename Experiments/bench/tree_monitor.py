"""Peak memory and CPU time of a whole process tree (Ray's GCS, raylet and workers included),
sampled from /proc: the cost of a benchmark that starts processes of its own (Linux only)."""
from __future__ import annotations

import os
import threading


class TreeMonitor:
    """Samples RSS, PSS and CPU time of this process and all its descendants."""

    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self.root = os.getpid()
        self.peak_rss = self.peak_pss = 0
        self.peak_procs = 0
        self.cpu = {}  # pid -> (starttime, cpu seconds), last seen
        self.tick = os.sysconf("SC_CLK_TCK")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _tree(self):
        children = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    st = f.read()
            except OSError:
                continue
            rest = st[st.rfind(")") + 2:].split()
            children.setdefault(int(rest[1]), []).append((int(d), rest))
        out, todo = [], [self.root]
        try:
            with open(f"/proc/{self.root}/stat") as f:
                st = f.read()
            out.append((self.root, st[st.rfind(")") + 2:].split()))
        except OSError:
            pass
        while todo:
            for pid, rest in children.get(todo.pop(), []):
                out.append((pid, rest))
                todo.append(pid)
        return out

    def _name(self, pid):
        if pid == self.root:
            return "driver (server)"
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            return "?"
        words = [w.decode(errors="replace") for w in cmd if w]
        name = os.path.basename(words[0]) if words else "?"
        if name.startswith("python") and len(words) > 1:  # python -u .../x.py
            name = os.path.basename(next((w for w in words[1:] if w.endswith(".py")),
                                         words[1]))
        return name

    def sample(self):
        rss = pss = 0
        procs = self._tree()
        for pid, rest in procs:
            # fields after ')' : state=0 ppid=1 ... utime=11 stime=12 starttime=19
            self.cpu[pid] = (self._name(pid), (int(rest[11]) + int(rest[12])) / self.tick)
            try:
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith("Rss:"):
                            rss += int(line.split()[1]) * 1024
                        elif line.startswith("Pss:"):
                            pss += int(line.split()[1]) * 1024
            except OSError:
                pass
        self.peak_rss = max(self.peak_rss, rss)
        self.peak_pss = max(self.peak_pss, pss)
        self.peak_procs = max(self.peak_procs, len(procs))

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.sample()
        self._stop.set()
        self._thread.join()

    def cpu_seconds(self):
        return sum(c for _, c in self.cpu.values())

    def cpu_by_process(self):
        out = {}
        for name, c in self.cpu.values():
            out[name] = round(out.get(name, 0.0) + c, 2)
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))
