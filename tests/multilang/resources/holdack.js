// A Node.js bolt that acks each tuple 20 ms after it arrived (asynchronously, so several
// are in hand at once), and writes the most it ever held unacked to the file $HOLD_LOG.
'use strict';
const fs = require('fs');

let buffer = '';
let started = false;
let held = 0;
let most = 0;

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + '\nend\n');
}

function handle(msg) {
  if (!started) {
    started = true;
    fs.closeSync(fs.openSync(msg.pidDir + '/' + process.pid, 'w'));
    send({pid: process.pid});
    return;
  }
  if (Array.isArray(msg)) return;
  if (msg.stream === '__heartbeat') {
    send({command: 'sync'});
    return;
  }
  held += 1;
  if (held > most) {
    most = held;
    fs.writeFileSync(process.env.HOLD_LOG, String(most));
  }
  setTimeout(() => {
    held -= 1;
    send({command: 'ack', id: msg.id});
  }, 20);
}

process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf('\nend\n')) >= 0) {
    const text = buffer.slice(0, end);
    buffer = buffer.slice(end + 5);
    if (text.trim().length > 0) handle(JSON.parse(text));
  }
});
process.stdin.on('end', () => process.exit(0));
