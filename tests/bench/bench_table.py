"""bench_table.py — what tests/bench/bench_run.sh recorded, read back for a benchmark's table.

The GPU benchmark scripts run each step through bench_run (LOGDIR/NAME.status
holds each step's exit status, LOGDIR/NAME.STEP.out its output) and then
print a markdown table from it with a short Python program that imports this
module. A step that did not give a result still gets a cell that says why:
"skipped: <reason>" (exit 77, or not run) or "FAILED: <reason>".

Also the theoretical host-to-device peak of a PCIe link, for the tables and
for tests/gpu/run's environment step: python3 bench_table.py pcie-peak GEN WIDTH."""
import json
import os
import sys

# GB/s of one direction of a PCIe link per lane, by generation (encoding
# 8b/10b up to gen 2, 128b/130b from gen 3; gen 6 counted like gen 5 x 2).
LANE_GBS = {1: 0.25, 2: 0.5, 3: 8 * 128 / 130 / 8, 4: 16 * 128 / 130 / 8, 5: 32 * 128 / 130 / 8,
            6: 64 * 128 / 130 / 8}


def pcie_peak_gbs(gen, width):
    """GB/s one way over a link of that generation and lane count (KeyError
    for an unknown generation)."""
    return LANE_GBS[gen] * width


class Steps:
    def __init__(self, logdir, name):
        self.dir, self.name = logdir, name
        self.status = {}  # step -> (state, detail): ok, skip, fail
        path = os.path.join(logdir, name + ".status")
        for line in open(path):
            step, code, detail = (line.rstrip("\n").split("\t") + ["", ""])[:3]
            self.status[step] = self._state(step, code, detail)

    def _state(self, step, code, detail):
        if code in ("skip", "fail"):
            return code, detail
        if code == "0":
            return "ok", detail
        if code == "77":
            return "skip", self.last_log_line(step)
        if code in ("124", "137"):
            return "fail", f"out of time after {detail} s"
        return "fail", f"exit {code}: {self.last_log_line(step)}"

    def path(self, step, ext):
        return os.path.join(self.dir, f"{self.name}.{step}.{ext}")

    def last_log_line(self, step):
        try:
            lines = [l.strip() for l in open(self.path(step, "log"), errors="replace")]
        except OSError:
            return "no log"
        lines = [l for l in lines if l]
        return lines[-1][:160] if lines else "no message"

    def ok(self, step):
        return self.status.get(step, ("", ""))[0] == "ok"

    def lines(self, step):
        """The step's standard output, line by line ([] without a result)."""
        if not self.ok(step):
            return []
        try:
            return open(self.path(step, "out"), errors="replace").read().splitlines()
        except OSError:
            return []

    def json(self, step, key=None, value=None):
        """The step's last JSON line (the last with key == value, if given)."""
        for line in reversed(self.lines(step)):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict) and (key is None or r.get(key) == value):
                return r
        return None

    def why(self, step):
        """The cell for a step without a result."""
        state, detail = self.status.get(step, ("skip", "not run"))
        if state == "ok":
            return "FAILED: no result in its output"
        return ("skipped: " if state == "skip" else "FAILED: ") + detail.replace("|", "/")


def row(*cells):
    print("| " + " | ".join(str(c) for c in cells) + " |")


def met(ok):
    return "n/a" if ok is None else ("yes" if ok else "NO")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "pcie-peak":
        sys.exit("usage: bench_table.py pcie-peak GEN WIDTH")
    try:
        print("%.1f" % pcie_peak_gbs(int(sys.argv[2]), int(sys.argv[3])))
    except (KeyError, ValueError):
        print("?")
