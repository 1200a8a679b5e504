import http from 'k6/http';
import { check, sleep, group } from 'k6';

const BASE = 'http://127.0.0.1:9';

export const options = {
  vus: 2, userAgent: 'loadlab',
  iterations: 6,
  thresholds: {
    http_req_duration: ['p(95)<500', 'avg<200'],
    'http_req_duration{name:home}': ['p(99)<1000'], 'http_req_duration{name:gone}': ['p(99)<1000'],
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
    http_reqs: ['count>=6'],
    iterations: [{ threshold: 'count>5', abortOnFail: true }],
  },
};

export default function () {
  group('browse', function () {
    const res = http.get(`${BASE}/health?vu=${__VU}&iter=${__ITER}`, { tags: { name: 'home' } });
    check(res, {
      'status is 200': (r) => r.status === 200,
      'says ok': (r) => r.body.includes('ok'),
    });
  });
  http.post(BASE + '/items', JSON.stringify({ vu: __VU, name: 'item-' + __ITER }), {
    headers: { 'Content-Type': 'application/json', 'X-Trace': 'k6' },
  });
  http.put(BASE + '/items/1', { color: 'red' });
  http.del(BASE + '/items/1', null, { tags: { name: 'delete item' } });
  http.request('PATCH', BASE + '/items/2', 'raw', { redirects: 0 });
  sleep(0.01);
  if (__VU > 1) {
    http.get(BASE + '/odd');
  }
}
