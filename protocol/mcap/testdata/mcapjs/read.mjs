// Reads an MCAP file with @mcap/core, both indexed (summary) and streamed
// (linear), and prints what it found as JSON for the Go test to compare.
import { McapIndexedReader, McapStreamReader } from "@mcap/core";
import { readFileSync } from "node:fs";

const buf = readFileSync(process.argv[2]);
const readable = {
  size: async () => BigInt(buf.length),
  read: async (offset, length) => buf.subarray(Number(offset), Number(offset + length)),
};
const out = { indexed: {}, streamed: {} };

const reader = await McapIndexedReader.Initialize({ readable });
const summarise = (channels, schemas) => {
  const o = { channels: {}, schemas: {} };
  for (const [id, c] of channels) o.channels[id] = { topic: c.topic, schemaId: c.schemaId, messageEncoding: c.messageEncoding, count: 0, bytes: 0 };
  for (const [id, s] of schemas) o.schemas[id] = { name: s.name, encoding: s.encoding, data: Buffer.from(s.data).toString("utf8") };
  return o;
};
out.indexed = summarise(reader.channelsById, reader.schemasById);
for await (const m of reader.readMessages()) {
  const c = out.indexed.channels[m.channelId];
  c.count++;
  c.bytes += m.data.length;
}
out.statistics = { messageCount: Number(reader.statistics.messageCount), chunkCount: reader.statistics.chunkCount };

const stream = new McapStreamReader({ validateCrcs: true });
stream.append(buf);
const channels = new Map(), schemas = new Map();
let rec;
const streamed = { channels: {} };
while ((rec = stream.nextRecord())) {
  if (rec.type === "Channel") channels.set(rec.id, rec);
  if (rec.type === "Schema") schemas.set(rec.id, rec);
  if (rec.type === "Message") {
    streamed.channels[rec.channelId] = (streamed.channels[rec.channelId] ?? 0) + 1;
  }
}
out.streamed = { channels: streamed.channels, done: stream.done() };
process.stdout.write(JSON.stringify(out));
