#!/usr/bin/env python3
"""A client in another language: a lock-step loop against hapticd.

Usage: lockstep.py ws://127.0.0.1:PORT/ TICKS
Pushes the arm up, then down (each for at least TICKS/2 ticks and PHASE s), and checks that positions respond to forces
and that every message gets exactly one frame. Exits non-zero on failure.
"""
import asyncio
import json
import sys
import time

import websockets

PHASE = 0.25  # seconds each push lasts at least


def force(arm, z):
    return json.dumps({"arm3": [{"device_id": arm, "commands": {
        "set_cursor_force": {"vector": {"x": 0.0, "y": 0.0, "z": z}}}}]})


async def main(url, ticks):
    async with websockets.connect(url) as ws:
        inv = json.loads(await ws.recv())
        sid = inv["session_id"]
        arm = inv["arm3"][0]["device_id"]
        await ws.send(json.dumps({"session": {"configure": {"lease": {"ms": 200}}}}))
        json.loads(await ws.recv())
        # The arm moves in real time, so each push lasts at least PHASE
        # seconds as well as half the ticks: on a fast machine 1000 ticks
        # can take less time than the arm needs to travel 5 mm.
        async def push(zforce, z):
            start = time.monotonic()
            n = 0
            while n < ticks // 2 or time.monotonic() - start < PHASE:
                await ws.send(force(arm, zforce))
                frame = json.loads(await ws.recv())
                if frame.get("session_id") != sid or "errors" in frame:
                    raise SystemExit(f"tick {len(z)}: unexpected frame {frame}")
                z.append(frame["arm3"][0]["state"]["cursor_position"]["z"])
                n += 1

        z = []
        await push(2.0, z)
        half = len(z)
        await push(-4.0, z)
        # A push first has to stop the motion the previous one started:
        # compare against the peak.
        up = z[half - 1] - z[0]
        peak = max(z[half:])
        down = z[-1] - peak
        print(f"ticks={len(z)} z0={z[0]:.4f} after_up={z[half-1]:.4f} peak={peak:.4f} after_down={z[-1]:.4f}")
        if up <= 0.005 or down >= -0.005:
            raise SystemExit(f"positions did not follow the forces: up {up:+.4f} m, down from peak {down:+.4f} m")


asyncio.run(main(sys.argv[1], int(sys.argv[2])))
