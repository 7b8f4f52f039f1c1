// Confluent's Node.js client (@confluentinc/schemaregistry, npm) against Sluice's registry:
// register and fetch schemas, evolve, a 409 and a 40401 as RestErrors, and its
// AvroSerializer/AvroDeserializer on the registered schema.
//
//   node npm_check.js REGISTRY_URL
//
// Subjects `npm-*`. Prints "PASS registry: npm: <check> (secs)" or
// "FAIL registry: npm: <check>: <reason>" lines (the format of compat/clients/checklib.py)
// and exits 1 if any check failed. A check whose dependency failed is a FAIL, never a
// silent pass. Every request is bounded (axios timeout, one retry at most).
'use strict';

const assert = require('node:assert/strict');
const {
  SchemaRegistryClient, AvroSerializer, AvroDeserializer, SerdeType, RestError,
} = require('@confluentinc/schemaregistry');

const url = process.argv[2];
if (!url) {
  console.error('usage: node npm_check.js REGISTRY_URL');
  process.exit(2);
}
const TIMEOUT_MS = 10000;
const SUBJECT = 'npm-guide-value';
const TOPIC = 'npm-orders';

const ORDER_V1 = JSON.stringify({
  type: 'record', name: 'Order', namespace: 'com.example',
  fields: [{ name: 'id', type: 'string' }, { name: 'amount', type: 'double' }],
});
const ORDER_V2 = JSON.stringify({
  type: 'record', name: 'Order', namespace: 'com.example',
  fields: [{ name: 'id', type: 'string' }, { name: 'amount', type: 'double' },
    { name: 'currency', type: 'string', default: 'USD' },
    { name: 'note', type: ['null', 'string'], default: null }],
});
const ORDER_V3_INCOMPATIBLE = JSON.stringify({
  ...JSON.parse(ORDER_V2),
  fields: [...JSON.parse(ORDER_V2).fields, { name: 'customer', type: 'string' }],
});

// A fresh client per use: nothing answered from a cache.
function client() {
  return new SchemaRegistryClient({
    baseURLs: [url], maxRetries: 1, retriesWaitMs: 100, retriesMaxWaitMs: 500,
    createAxiosDefaults: { timeout: TIMEOUT_MS },
  });
}

const status = new Map();
let failed = 0;

async function check(name, fn, deps = []) {
  const missing = deps.filter((d) => status.get(d) !== true);
  const line = `registry: npm: ${name}`;
  if (missing.length) {
    status.set(name, false); failed += 1;
    console.log(`FAIL ${line}: skipped (depends on ${missing.join(', ')})`);
    return;
  }
  const started = process.hrtime.bigint();
  try {
    await fn();
    status.set(name, true);
    const secs = Number(process.hrtime.bigint() - started) / 1e9;
    console.log(`PASS ${line} (${secs.toFixed(1)}s)`);
  } catch (e) {
    status.set(name, false); failed += 1;
    let reason = e instanceof RestError
      ? `RestError HTTP ${e.status} error_code ${e.errorCode}: ${e.message}`
      : `${e && e.name ? e.name + ': ' : ''}${e && e.message ? e.message : e}`;
    reason = reason.split(/\s+/).join(' ');
    if (reason.length > 600) reason = reason.slice(0, 600) + '...';
    console.log(`FAIL ${line}: ${reason}`);
  }
}

async function expectRestError(promise, httpStatus, errorCode, what) {
  let result;
  try {
    result = await promise;
  } catch (e) {
    if (!(e instanceof RestError)) throw e;
    assert.deepEqual([e.status, e.errorCode], [httpStatus, errorCode],
      `${what}: HTTP ${e.status} error_code ${e.errorCode} (${e.message})`);
    assert.ok(e.message, `${what}: the error has no message`);
    return;
  }
  throw new Error(`${what}: expected RestError ${httpStatus}/${errorCode}, got ${JSON.stringify(result)}`);
}

const state = {};

async function registerAndFetch() {
  const id = await client().register(SUBJECT, { schemaType: 'AVRO', schema: ORDER_V1 });
  assert.ok(Number.isInteger(id) && id > 0, `register: id ${id}`);
  assert.equal(await client().register(SUBJECT, { schemaType: 'AVRO', schema: ORDER_V1 }), id,
    'the same schema registered again');
  const byId = await client().getBySubjectAndId(SUBJECT, id);
  assert.deepEqual(JSON.parse(byId.schema), JSON.parse(ORDER_V1), `GET /schemas/ids/${id}`);
  const latest = await client().getLatestSchemaMetadata(SUBJECT);
  assert.deepEqual([latest.id, latest.version, latest.subject], [id, 1, SUBJECT],
    'latest (id, version, subject)');
  assert.deepEqual(JSON.parse(latest.schema), JSON.parse(ORDER_V1), 'latest schema');
  const v1 = await client().getSchemaMetadata(SUBJECT, 1);
  assert.deepEqual([v1.id, v1.version], [id, 1], 'version 1 (id, version)');
  assert.equal(await client().getVersion(SUBJECT, { schemaType: 'AVRO', schema: ORDER_V1 }), 1,
    'lookup: version');
  assert.deepEqual(await client().getAllVersions(SUBJECT), [1], 'versions');
  assert.ok((await client().getAllSubjects()).includes(SUBJECT), 'GET /subjects lists the subject');
  state.v1 = id;
}

async function evolve() {
  assert.equal(await client().getDefaultCompatibility(), 'BACKWARD', 'global compatibility');
  assert.equal(await client().testSubjectCompatibility(SUBJECT, { schemaType: 'AVRO', schema: ORDER_V2 }),
    true, 'v2 is_compatible');
  const id = await client().register(SUBJECT, { schemaType: 'AVRO', schema: ORDER_V2 });
  assert.notEqual(id, state.v1, 'v2 got v1\'s id');
  const latest = await client().getLatestSchemaMetadata(SUBJECT);
  assert.deepEqual([latest.id, latest.version], [id, 2], 'latest after v2 (id, version)');
  assert.deepEqual(await client().getAllVersions(SUBJECT), [1, 2], 'versions');
  assert.equal(await client().testSubjectCompatibility(SUBJECT,
    { schemaType: 'AVRO', schema: ORDER_V3_INCOMPATIBLE }), false, 'v3 is_compatible');
  await expectRestError(client().register(SUBJECT, { schemaType: 'AVRO', schema: ORDER_V3_INCOMPATIBLE }),
    409, 409, 'registering v3 (a field without default)');
  assert.deepEqual(await client().getAllVersions(SUBJECT), [1, 2], 'versions after the 409');
  state.v2 = id;
}

async function notFound() {
  await expectRestError(client().getLatestSchemaMetadata('npm-no-such-subject'), 404, 40401,
    'latest of an unknown subject');
  await expectRestError(client().getSchemaMetadata(SUBJECT, 99), 404, 40402,
    'an unknown version');
  await expectRestError(client().getBySubjectAndId(SUBJECT, 987654), 404, 40403,
    'an unknown id');
}

async function serde() {
  const c = client();
  const subject = `${TOPIC}-value`;
  const id = await c.register(subject, { schemaType: 'AVRO', schema: ORDER_V2 });
  assert.equal(id, state.v2, 'the v2 schema\'s id under a second subject (ids are global)');
  const serializer = new AvroSerializer(c, SerdeType.VALUE,
    { useLatestVersion: true, autoRegisterSchemas: false });
  const deserializer = new AvroDeserializer(client(), SerdeType.VALUE, {});
  const values = [0, 1, 2, 3].map((i) => ({
    id: `n-${i}`, amount: i * 10 + 0.25, currency: ['USD', 'EUR'][i % 2],
    note: i % 2 ? `note é ${i}` : null,
  }));
  for (const [i, value] of values.entries()) {
    const bytes = await serializer.serialize(TOPIC, value);
    assert.equal(bytes[0], 0, `record ${i}: magic byte`);
    assert.equal(bytes.readInt32BE(1), id, `record ${i}: schema id`);
    const back = await deserializer.deserialize(TOPIC, bytes);
    assert.deepEqual(JSON.parse(JSON.stringify(back)), value, `record ${i} decoded`);
  }
}

(async () => {
  const registered = 'register Order v1 and fetch it (by id, latest, version 1, lookup, subjects)';
  const evolved = 'Order v2 registers as version 2; v3 is refused: RestError 409 / 409';
  await check(registered, registerAndFetch);
  await check(evolved, evolve, [registered]);
  await check('unknown subject, version and id: RestError 40401, 40402, 40403', notFound, [registered]);
  await check('AvroSerializer (latest version) -> bytes -> AvroDeserializer: values equal', serde, [evolved]);
  process.exit(failed ? 1 : 0);
})().catch((e) => {
  console.log(`FAIL registry: npm: (script): ${e && e.stack ? e.stack.split('\n')[0] : e}`);
  process.exit(1);
});
