// Runs each SQL statement given on stdin (separated by lines ending in ";")
// with DuckDB's Node API, in the current directory, and prints one JSON
// line per statement: {"sql": ..., "rows": N} or {"sql": ..., "error": ...}.
// The README test (e2e/readme_test.go) runs the README's SQL through it.
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';

const text = readFileSync(0, 'utf8');
const statements = [];
let cur = [];
for (const line of text.split('\n')) {
  if (line.trim().startsWith('--') && cur.length === 0) continue;
  cur.push(line);
  if (line.trimEnd().endsWith(';')) {
    statements.push(cur.join('\n').trim());
    cur = [];
  }
}
if (cur.join('').trim() !== '') statements.push(cur.join('\n').trim());

const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
let failed = false;
for (const sql of statements) {
  try {
    const reader = await conn.runAndReadAll(sql);
    console.log(JSON.stringify({ sql, rows: reader.getRows().length }));
  } catch (e) {
    failed = true;
    console.log(JSON.stringify({ sql, error: String(e.message || e) }));
  }
}
process.exit(failed ? 1 : 0);
