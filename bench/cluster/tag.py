#!/usr/bin/env python3
"""Adds the setup's name and the machine's load average to every JSON line on stdin."""
import json
import sys

setup, load = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    if line.startswith("{"):
        row = json.loads(line)
        row["setup"] = setup
        row["loadavg_1_5_15"] = load
        print(json.dumps(row))
