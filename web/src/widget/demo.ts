// The demo page of <mandate-verify>: a token pasted in the field is verified
// as it is typed, against the key set named in the second field.

import "./demo.css";
import "./element.js";

const form = document.getElementById("demo") as HTMLFormElement;
const token = document.getElementById("token") as HTMLTextAreaElement;
const jwksUrl = document.getElementById("jwks-url") as HTMLInputElement;
const widget = document.querySelector("mandate-verify") as HTMLElement;

function apply(): void {
  widget.setAttribute("token", token.value.trim());
  const url = jwksUrl.value.trim();
  if (url === "") {
    widget.removeAttribute("jwks-url");
  } else {
    widget.setAttribute("jwks-url", url);
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  apply();
});
token.addEventListener("input", apply);
jwksUrl.addEventListener("change", apply);
