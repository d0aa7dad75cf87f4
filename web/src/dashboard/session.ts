// The signed-in API key and what it is: the key kept in sessionStorage for
// this tab only, never in a URL, and dropped on sign-out or when the server
// refuses it; its organisation, role and permissions (`GET /v1/me`) kept in
// memory, asked again on every load of the page.
//
// What a view offers follows the key's `permissions`, asked with `can`;
// no view decides by the name of a role.

import { type Me, MandateClient, type Permission } from "mandate-sdk/web";

const STORAGE_KEY = "mandate.api_key";

let identity: Me | undefined;

/** The API key of this tab, if signed in. */
export function apiKey(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

/** Keeps `key`, which the server described as `me`. */
export function signIn(key: string, me: Me): void {
  sessionStorage.setItem(STORAGE_KEY, key);
  identity = me;
}

export function signOut(): void {
  sessionStorage.removeItem(STORAGE_KEY);
  identity = undefined;
}

/** The signed-in key's organisation, role and permissions, once known. */
export function whoAmI(): Me | undefined {
  return identity;
}

/** Asks the server what the tab's key is (after a reload, which keeps only the key). */
export async function loadIdentity(): Promise<Me> {
  identity = await client().me();
  return identity;
}

/** Whether the signed-in key's role allows `permission`. */
export function can(permission: Permission): boolean {
  return identity?.permissions.includes(permission) ?? false;
}

/** A client of the server that served this page, with `key` or the tab's key. */
export function client(key: string | null = apiKey()): MandateClient {
  return new MandateClient(
    key === null ? { baseUrl: location.origin } : { baseUrl: location.origin, apiKey: key },
  );
}
