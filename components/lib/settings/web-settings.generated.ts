// Written by `npm run build` (cli/settings-types.ts) from webSettingsSchema, where each doc and default is written:
// edit them there. A unit test fails while this file differs from what the schema gives.
import type { z } from "zod";
import type { webSettingsSchema } from "./web-settings";

/**
 * The web's settings as ConcourseWebArgs takes them (webSettingsSchema's input), with each setting's doc from the schema.
 */
export interface WebSettingsInput {
    /**
     * the web's port on the web host (plain HTTP; with `tls`, kept for the API on the host)
     *
     * Default: `8080`.
     */
    port?: z.input<typeof webSettingsSchema>["port"];
    /**
     * the TSA's port on the web host (workers register there)
     *
     * Default: `2222`.
     */
    tsaPort?: z.input<typeof webSettingsSchema>["tsaPort"];
    /**
     * the web's HTTPS port (with `tls`; an LXD instance's `publish.web` then forwards to it)
     *
     * Default: `443`.
     */
    tlsPort?: z.input<typeof webSettingsSchema>["tlsPort"];
    /**
     * where both listen (Concourse binds its plain port and its HTTPS port to the same address). A web that the network reaches over plain HTTP (this address, or an LXD instance's `publish.web` on an `sshAddress` that is not loopback) gets a warning at preview, at up and in the offline render: its password crosses the network in clear
     *
     * Default: `0.0.0.0`; `127.0.0.1` in LXD.
     */
    bindIp?: z.input<typeof webSettingsSchema>["bindIp"];
    /**
     * the URL users and fly reach the web on (`http://` or `https://`, plain characters)
     *
     * Default: `http://<ssh host>:<port>` (`https://<ssh host>:<tlsPort>` with `tls`), or `<sshAddress>:<publish.web>`.
     */
    externalUrl?: z.input<typeof webSettingsSchema>["externalUrl"];
    /**
     * the main team's local user (letters, digits and `_ . -`); its password is generated (32 letters and digits), a secret output (`pulumi stack output web --show-secrets`)
     *
     * Default: `admin`.
     */
    mainTeamUser?: z.input<typeof webSettingsSchema>["mainTeamUser"];
    /**
     * keep the local database when the web is destroyed
     *
     * Default: `false`.
     */
    keepDatabase?: z.input<typeof webSettingsSchema>["keepDatabase"];
}

/** The interface is the schema's input exactly, its groups and every field's type: tsc fails here otherwise. */
export type WebSettingsInputCheck = [
    IsTrue<Same<WebSettingsInput, z.input<typeof webSettingsSchema>>>,
    IsTrue<Same<keyof WebSettingsInput, keyof z.input<typeof webSettingsSchema>>>,
];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type IsTrue<T extends true> = T;
