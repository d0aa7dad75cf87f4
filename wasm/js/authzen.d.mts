import * as pep from "../pkg/node/authzen.js";

export * from "../pkg/node/authzen.js";
export default pep;
