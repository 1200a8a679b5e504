import http from 'k6/http';
import { check } from 'k6';
import { SharedArray } from 'k6/data';
import papaparse from 'https://jslib.k6.io/papaparse/5.1.1/index.js';

const users = new SharedArray('users', function () {
  return papaparse.parse(open('./users.csv'), { header: true }).data;
});
const products = new SharedArray('products', function () {
  return JSON.parse(open('./products.json'));
});

export const options = { vus: 2, iterations: 4 };

export default function () {
  const user = users[__VU - 1];
  const product = products[Math.floor(Math.random() * products.length)];
  const res = http.post('http://127.0.0.1:9/login', JSON.stringify({ user: user.username, password: user.password }), {
    headers: { 'Content-Type': 'application/json' },
  });
  check(res, { ok: (r) => r.status === 200 });
  http.get(`http://127.0.0.1:9/products/${product.id}?sku=${product.sku}`);
  http.batch([['GET', 'http://127.0.0.1:9/a']]);
}

export function teardown() {}
