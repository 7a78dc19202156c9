// The reference's pre-run resume verdict for many cases in one node process.
//
// The oracle's `fold.mjs --check-resume FILE` starts node for one case (about half a second); a random
// differential of thousands of cases needs them in one process. This driver does, per case, what that
// mode does: an HttpAgent with the case's pending interrupts, `runAgent({resume})` against an
// in-process fetch answering an empty body, `Date` pinned to the case's `now`, and the same verdict
// fields. `python -m tools.differential.resume` checks it against the stored golden verdicts of
// fold.mjs before trusting it, and can send cases through fold.mjs itself (`--confirm`).
//
// Run from a folder whose node_modules is the oracle's (resume.py links it): bare imports resolve
// there. Input: one case per line on stdin; output: one verdict per line on stdout.

import { createInterface } from "node:readline";
import { HttpAgent, isInterruptExpired } from "@ag-ui/client";

// What the reference prints (warnings of the egress stage, runAgent's error report) is not a verdict.
for (const level of ["log", "info", "warn", "error", "debug"]) console[level] = () => {};

const RealDate = Date;

function pinned(nowMs) {
  return class FixedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(nowMs);
      else super(...args);
    }
    static now() {
      return nowMs;
    }
  };
}

class CountingAgent extends HttpAgent {
  run(input) {
    this.runInvoked = true;
    return super.run(input);
  }
}

async function verdict(spec) {
  const pending = spec.pendingInterrupts ?? [];
  const resume = spec.resume;
  const nowMs = typeof spec.now === "number" ? spec.now : RealDate.parse(spec.now);
  if (!Number.isFinite(nowMs)) throw new Error(`"now" is not a timestamp: ${JSON.stringify(spec.now)}`);
  const calls = [];
  const fetchFn = async (url, init) => {
    calls.push(init);
    return new Response(new ReadableStream({ start: (c) => c.close() }), {
      status: 200,
      headers: { "content-type": "text/event-stream" },
    });
  };
  const agent = new CountingAgent({ url: "http://127.0.0.1/unused", fetch: fetchFn, threadId: "thread-oracle" });
  agent.pendingInterrupts = structuredClone(pending);
  agent.runInvoked = false;
  let refused = false;
  let error = null;
  globalThis.Date = pinned(nowMs);
  try {
    await agent.runAgent({ runId: "run-oracle", ...(resume !== undefined && { resume }) });
  } catch (e) {
    refused = true;
    error = e instanceof Error ? e.message : String(e);
  } finally {
    globalThis.Date = RealDate;
  }
  let stage = null;
  if (refused) stage = !agent.runInvoked ? "onInitialize" : calls.length === 0 ? "egress" : "stream";
  const now = new RealDate(nowMs);
  const resumeIds = new Set((Array.isArray(resume) ? resume : []).map((r) => r?.interruptId));
  const pendingIds = new Set(pending.map((i) => i?.id));
  return {
    wouldRefuse: refused,
    stage,
    error,
    expired: pending.filter((i) => isInterruptExpired(i, now)).map((i) => i.id),
    // (per pending interrupt, in order: a repeated id is judged copy by copy)
    expiredFlags: pending.map((i) => isInterruptExpired(i, now)),
    uncovered: pending.map((i) => i.id).filter((id) => !resumeIds.has(id)),
    unknownResumeIds: [...resumeIds].filter((id) => !pendingIds.has(id)),
  };
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let out;
  try {
    out = await verdict(JSON.parse(line));
  } catch (e) {
    out = { oracleError: e instanceof Error ? e.message : String(e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
