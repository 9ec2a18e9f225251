// A request mix of one request for openloop.mjs: the same GET with the same headers every time
// (bench 12's warm first page as its reader).
export function makers({ path, headers = {} }) {
  return [{ name: "read", weight: 1, request: () => ({ method: "GET", path, headers }) }];
}
