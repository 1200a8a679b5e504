import http from 'k6/http';
import { check, sleep } from 'k6';
import { randomIntBetween } from 'https://jslib.k6.io/k6-utils/1.4.0/index.js';

export default function () {
  const login = http.post(`${__ENV.SITE}/login`, JSON.stringify({ user: 'u' + __VU, n: 2 }), {
    headers: { 'Content-Type': 'application/json' },
  });
  const token = login.json('auth.token');
  const first = login.json().items[0].id;
  const where = login.headers['Location'];
  const size = login.timings.duration;
  http.get(`${__ENV.SITE}/me/${first}`, { headers: { Authorization: `Bearer ${token}`, 'X-From': where } });
  http.get(`${__ENV.OTHER}/elsewhere`);
  sleep(Math.random() * 2);
  sleep(0.5 + randomIntBetween(1, 3));
  sleep(__VU);
}
