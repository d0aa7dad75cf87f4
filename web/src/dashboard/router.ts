// Hash routes (`#/workflow/prov_…?agent_id=…`), so the server serves one
// page and a reload keeps the view. The API key never enters a route.

export interface Route {
  /** The decoded path segments: `["workflow", "prov_…"]`. */
  segments: string[];
  params: URLSearchParams;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function currentRoute(): Route {
  const raw = location.hash.replace(/^#/, "");
  const mark = raw.indexOf("?");
  const path = mark < 0 ? raw : raw.slice(0, mark);
  const query = mark < 0 ? "" : raw.slice(mark + 1);
  return {
    segments: path.split("/").filter((s) => s !== "").map(decode),
    params: new URLSearchParams(query),
  };
}

/** A route from path segments and query parameters (empty ones left out). */
export function route(segments: string[], params: Record<string, string | undefined> = {}): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== "") {
      query.set(name, value);
    }
  }
  const text = query.toString();
  return `/${segments.map(encodeURIComponent).join("/")}${text ? `?${text}` : ""}`;
}

export function navigate(to: string): void {
  location.hash = to;
}
