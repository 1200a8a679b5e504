import http from "k6/http";
export const options = {
  stages: [
    { duration: "1s", target: 3 },
    { duration: "1s", target: 0 },
  ],
};
export default function () {
  http.get(`${__ENV.SITE}/ramp`);
}
