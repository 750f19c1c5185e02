"""Run a command; when it ends, print one line: its wall time and the CPU time (user + system) of it and of every
process it waited for, so that a CI run shows where its time goes (the budget: .ci/run within 20 minutes on a
2-core machine). On a busy machine wall time stretches and CPU time much less: compare CPU times across runs.

    python3 .ci/timed.py NAME COMMAND [ARG ...]      # exits with COMMAND's status
"""

import resource
import subprocess
import sys
import time

if len(sys.argv) < 3:
    raise SystemExit(__doc__.strip().splitlines()[-1].strip())
name, command = sys.argv[1], sys.argv[2:]
start = time.monotonic()
status = subprocess.call(command)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f'[time] {name}: {time.monotonic() - start:.0f} s wall, CPU {usage.ru_utime:.0f} s user + '
      f'{usage.ru_stime:.0f} s sys', flush=True)
sys.exit(status)
