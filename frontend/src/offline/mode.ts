// Whether the page runs inside an exported report (offline.html), where there is no API to download from.
let offline = false;

export function enterOfflineMode(): void {
  offline = true;
}

export const isOffline = (): boolean => offline;
