// storm-starter's splitsentence.js without storm.js: [sentence] -> [word] per word, over
// Storm's multilang protocol (JSON documents each followed by a line "end").
'use strict';
const fs = require('fs');

let buffer = '';
let started = false;

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + '\nend\n');
}

function handle(msg) {
  if (!started) { // the handshake: create pidDir/<pid>, answer with the pid
    started = true;
    fs.closeSync(fs.openSync(msg.pidDir + '/' + process.pid, 'w'));
    send({pid: process.pid});
    return;
  }
  if (Array.isArray(msg)) return; // task ids: not asked for
  if (msg.stream === '__heartbeat') {
    send({command: 'sync'});
    return;
  }
  for (const word of String(msg.tuple[0]).split(' ')) {
    if (word) send({command: 'emit', anchors: [msg.id], tuple: [word], need_task_ids: false});
  }
  send({command: 'ack', id: msg.id});
}

process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf('\nend\n')) >= 0) {
    const text = buffer.slice(0, end);
    buffer = buffer.slice(end + 5);
    if (text.trim()) handle(JSON.parse(text));
  }
});
process.stdin.on('end', () => process.exit(0));
