import * as sdk from "../pkg/node/index.js";

export * from "../pkg/node/index.js";
export default sdk;
