# BROKEN: prints RESULT PASS and calls os._exit(0) at import. EXPECT percentiles: ended its process (exit status 0)
"""Would cheat: prints the harness's result line and ends its process at import."""

import os
import sys

print("RESULT PASS")
sys.stdout.flush()
os._exit(0)
