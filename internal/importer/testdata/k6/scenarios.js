import http from 'k6/http';
import { sleep } from 'k6';

export const options = {
  scenarios: {
    browse: { executor: 'constant-vus', vus: 2, duration: '1s', gracefulStop: '5s', exec: 'browse' },
    signup: { startTime: '0s', executor: 'constant-arrival-rate', rate: 10, timeUnit: '1s', duration: '1s', preAllocatedVUs: 2, maxVUs: 5, exec: 'signup' },
    ramp: { executor: 'ramping-arrival-rate', startRate: 0, timeUnit: '1s', maxVUs: 4, stages: [{ target: 10, duration: '1s' }], exec: 'signup' },
    each: { executor: 'per-vu-iterations', vus: 2, iterations: 3, exec: 'browse' },
    shared: { executor: 'shared-iterations', vus: 2, iterations: 4, exec: 'browse' },
    rvus: { executor: 'ramping-vus', startVUs: 0, stages: [{ duration: '1s', target: 2 }], exec: 'browse' },
    ext: { executor: 'externally-controlled', vus: 1, maxVUs: 2, duration: '1s' },
  },
  thresholds: {
    'http_req_duration{scenario:signup}': ['p(95)<300'],
    'http_reqs{scenario:browse}': ['rate>1'],
    http_req_receiving: ['avg<10'],
  },
};

export function browse() {
  http.get('http://127.0.0.1:9/browse');
  sleep(0.02);
}

export function signup() {
  http.post('http://127.0.0.1:9/users', { email: `u${__VU}-${__ITER}@example.com` });
}

export default function () {
  http.get('http://127.0.0.1:9/');
}
