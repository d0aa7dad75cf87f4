// The signed-in API key: kept in sessionStorage for this tab only, never in
// a URL, and dropped on sign-out or when the server refuses it.

import { MandateClient } from "mandate-sdk/web";

const STORAGE_KEY = "mandate.api_key";

/** The API key of this tab, if signed in. */
export function apiKey(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

export function signIn(key: string): void {
  sessionStorage.setItem(STORAGE_KEY, key);
}

export function signOut(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

/** A client of the server that served this page, with `key` or the tab's key. */
export function client(key: string | null = apiKey()): MandateClient {
  return new MandateClient(
    key === null ? { baseUrl: location.origin } : { baseUrl: location.origin, apiKey: key },
  );
}
