// Building DOM from data without ever parsing markup: every text the server
// sends ends up in a text node or an attribute, never in innerHTML.

export type Child = Node | string | number | null | undefined | false;

type Listener = (event: Event) => void;

/** Attributes by name; `on<event>` members are listeners, `false`/null/undefined leave the attribute out. */
export type Props = Record<string, string | number | boolean | null | undefined | Listener>;

/** Creates an element with attributes, listeners and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (value === true) {
      element.setAttribute(name, "");
    } else if (value !== false && value !== null && value !== undefined) {
      element.setAttribute(name, String(value));
    }
  }
  append(element, children);
  return element;
}

/** Appends children, skipping the empty ones. */
export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces every child of `parent`. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) {
    parent.removeChild(parent.firstChild);
  }
  append(parent, children);
}

/** A link to a dashboard route. */
export function link(route: string, ...children: Child[]): HTMLAnchorElement {
  return h("a", { href: `#${route}` }, ...children);
}

/** A term and its description for a `<dl>`. */
export function entry(term: string, ...description: Child[]): DocumentFragment {
  const fragment = document.createDocumentFragment();
  append(fragment, [h("dt", {}, term), h("dd", {}, ...description)]);
  return fragment;
}
