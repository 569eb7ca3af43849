// lockstep.js drives hapticd's simulation WebSocket (the README's simulation channel section)
// the way hapticbench does, for users who already run k6:
//
//   go install go.k6.io/k6@v1.8.1
//   hapticd --sim-arms 100 &
//   k6 run -e HAPTICD_URL=ws://127.0.0.1:10001/ -e CLIENTS=100 -e RATE=1000 \
//          -e DURATION=20s bench/k6/lockstep.js
//
// Each controlling session (a k6 VU) opens one socket, reads the inventory,
// and then sends set_cursor_force to its own arm (arm i mod N) and waits for
// the frame before sending the next: one message, one frame, in order.
// Observers (OBSERVERS=K) only send probe_position. RATE=0 sends as fast as
// the round trip allows; RATE>0 sends on absolute deadlines start+k/RATE and
// skips missed deadlines instead of bursting.
//
// Environment: HAPTICD_URL, CLIENTS (1), OBSERVERS (0), RATE Hz (0),
// DURATION (10s), WARMUP (2s, not recorded), FRAME_TIMEOUT (5s).
//
// Metrics: hapticd_rtt, hapticd_frames, hapticd_missed_deadlines, and the
// contract counters hapticd_lost, hapticd_out_of_order, hapticd_error_frames
// and hapticd_session_errors, whose thresholds of zero fail the k6 run on a
// broken contract or a session that could not run.
//
// Limits: k6 v1.8 has no performance.now, so hapticd_rtt is in whole
// milliseconds (Date.now) and its percentiles only show slow ticks; its
// timers are millisecond-grained too, so paced rates above a few hundred Hz
// per VU fall short (hapticd_missed_deadlines counts it). hapticbench is the
// reference for the figures: nanosecond RTT histograms, /stats, and the
// echo and bare-loop baselines in the same run.

import { WebSocket } from 'k6/websockets';
import { setTimeout, clearTimeout } from 'k6/timers';
import { Counter, Trend } from 'k6/metrics';
import exec from 'k6/execution';

const URL = __ENV.HAPTICD_URL || 'ws://127.0.0.1:10001/';
const CLIENTS = parseInt(__ENV.CLIENTS || '1', 10);
const OBSERVERS = parseInt(__ENV.OBSERVERS || '0', 10);
const RATE = parseFloat(__ENV.RATE || '0');
const DURATION_MS = durationMs(__ENV.DURATION || '10s');
const WARMUP_MS = durationMs(__ENV.WARMUP || '2s');
const FRAME_TIMEOUT_MS = durationMs(__ENV.FRAME_TIMEOUT || '5s');

const rtt = new Trend('hapticd_rtt', true);
const frames = new Counter('hapticd_frames');
const missed = new Counter('hapticd_missed_deadlines');
const lost = new Counter('hapticd_lost');
const outOfOrder = new Counter('hapticd_out_of_order');
const errorFrames = new Counter('hapticd_error_frames');
const sessionErrors = new Counter('hapticd_session_errors');

const now = (typeof performance !== 'undefined' && typeof performance.now === 'function')
  ? () => performance.now()
  : () => Date.now();

// The whole session is one iteration; give it the warm-up, the window and
// room for the alignment check and close.
const maxDuration = `${Math.ceil((WARMUP_MS + DURATION_MS + FRAME_TIMEOUT_MS * 3) / 1000) + 5}s`;

const scenarios = {
  controllers: { executor: 'per-vu-iterations', vus: CLIENTS, iterations: 1, maxDuration, exec: 'controller' },
};
if (OBSERVERS > 0) {
  scenarios.observers = { executor: 'per-vu-iterations', vus: OBSERVERS, iterations: 1, maxDuration, exec: 'observer' };
}

export const options = {
  scenarios,
  thresholds: {
    hapticd_lost: ['count==0'],
    hapticd_out_of_order: ['count==0'],
    hapticd_error_frames: ['count==0'],
    hapticd_session_errors: ['count==0'],
  },
  summaryTrendStats: ['avg', 'med', 'p(90)', 'p(99)', 'p(99.9)', 'max', 'count'],
};

export function controller() {
  session('controller', exec.scenario.iterationInTest);
}

export function observer() {
  session('observer', exec.scenario.iterationInTest);
}

// Frames after the inventory carry "config" only when the message asked for
// the full state, so a surplus or missing frame shows up as a frame with or
// without config in the wrong place.
const FULL_STATE = '{"session":{"force_render_full_state":{}}}';
const PING = '{}';

function session(role, index) {
  const ws = new WebSocket(URL);
  let sessionId = 0;
  let message = '';
  let start = 0; // time of the first tick
  let tick = 0;
  let sentAt = 0;
  let watchdog = null;
  let phase = 'inventory'; // inventory | run | check-full | check-ping | done
  const periodMs = RATE > 0 ? 1000 / RATE : 0;

  const finish = () => {
    phase = 'done';
    if (watchdog !== null) clearTimeout(watchdog);
    ws.close();
  };
  const send = (msg) => {
    sentAt = now();
    ws.send(msg);
    watchdog = setTimeout(() => {
      lost.add(1);
      console.error(`${role} ${index}: no frame within ${FRAME_TIMEOUT_MS} ms`);
      finish();
    }, FRAME_TIMEOUT_MS);
  };
  const next = () => {
    const t = now() - start;
    if (t >= WARMUP_MS + DURATION_MS) {
      phase = 'check-full';
      send(FULL_STATE);
      return;
    }
    if (periodMs === 0) {
      send(message);
      return;
    }
    let deadline = tick * periodMs;
    if (t > deadline + periodMs) {
      const skip = Math.floor((t - deadline) / periodMs);
      if (deadline >= WARMUP_MS) missed.add(skip);
      tick += skip;
      deadline = tick * periodMs;
    }
    tick++;
    const wait = deadline - t;
    if (wait > 0) {
      setTimeout(() => send(message), wait);
    } else {
      send(message);
    }
  };
  const check = (frame, wantConfig) => {
    const m = /"session_id"\s*:\s*(\d+)/.exec(frame);
    if (!m || parseInt(m[1], 10) !== sessionId) {
      outOfOrder.add(1);
      console.error(`${role} ${index}: frame of session ${m ? m[1] : 'none'}, want ${sessionId}`);
    }
    if (frame.includes('"errors"')) {
      errorFrames.add(1);
      console.error(`${role} ${index}: frame with errors: ${frame.slice(0, 300)}`);
    }
    if (frame.includes('"config"') !== wantConfig) {
      outOfOrder.add(1);
      console.error(`${role} ${index}: frame with config=${!wantConfig} where the message asked for config=${wantConfig}`);
    }
  };

  ws.onmessage = (event) => {
    const frame = typeof event.data === 'string' ? event.data : String(event.data);
    const received = now();
    if (phase === 'inventory') {
      const inv = JSON.parse(frame);
      const arms = inv.arm3 || [];
      if (!inv.session_id || arms.length === 0) {
        console.error(`${role} ${index}: the inventory has no session_id or no arm3 devices; start hapticd with --sim-arms N`);
        sessionErrors.add(1);
        finish();
        return;
      }
      sessionId = inv.session_id;
      const id = arms[index % arms.length].device_id;
      message = role === 'observer'
        ? JSON.stringify({ arm3: [{ device_id: id, commands: { probe_position: {} } }] })
        : JSON.stringify({ arm3: [{ device_id: id, commands: { set_cursor_force: { vector: { x: 0, y: 0, z: 0.5 } } } }] });
      phase = 'run';
      start = now();
      next();
      return;
    }
    if (watchdog !== null) {
      clearTimeout(watchdog);
      watchdog = null;
    }
    switch (phase) {
      case 'run':
        check(frame, false);
        if (sentAt - start >= WARMUP_MS) {
          rtt.add(received - sentAt);
          frames.add(1);
        }
        next();
        break;
      case 'check-full':
        check(frame, true);
        phase = 'check-ping';
        send(PING);
        break;
      case 'check-ping':
        check(frame, false);
        finish();
        break;
      default:
        outOfOrder.add(1); // a frame after the session was done
    }
  };
  // A socket that fails or closes with a message outstanding lost its frame.
  ws.onerror = (e) => {
    console.error(`${role} ${index}: ${e.error || e}`);
    if (phase !== 'done') sessionErrors.add(1);
    if (phase !== 'done' && watchdog !== null) lost.add(1);
    finish();
  };
  ws.onclose = () => {
    if (phase !== 'done' && watchdog !== null) {
      lost.add(1);
      console.error(`${role} ${index}: the service closed the socket with a frame outstanding`);
    }
    if (watchdog !== null) clearTimeout(watchdog);
    phase = 'done';
  };
}

// durationMs reads Go-style durations such as 500ms, 10s, 1m30s.
function durationMs(s) {
  const units = { ms: 1, s: 1000, m: 60000, h: 3600000 };
  let total = 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let m;
  let matched = '';
  while ((m = re.exec(s)) !== null) {
    total += parseFloat(m[1]) * units[m[2]];
    matched += m[0];
  }
  if (matched !== s) throw new Error(`bad duration ${s}: use e.g. 500ms, 10s, 1m30s`);
  return total;
}
