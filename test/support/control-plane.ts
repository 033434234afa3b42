/**
 * A real Kubernetes control plane for tests: etcd, kube-apiserver and kube-controller-manager
 * built from Go modules by scripts/bootstrap-kubernetes.sh (cached like the engine), started on
 * 127.0.0.1 only, each logging to its own file and stopped by pid. No kubelet and no scheduler:
 * objects are stored, validated (CRD schemas, immutable fields, admission) and reconciled by the
 * controllers (namespace deletion finishes), but no pod runs.
 */
import { ChildProcess, execFileSync, spawn } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as https from "https";
import * as net from "net";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { TestPki } from "./pki";
import { ensureCommands } from "./tools";

/** What the bootstrap built: the binaries, the provider plugin's folder, Cilium's CRDs. */
export interface KubernetesTools {
    /** Holds the binaries below; put it on PATH for the engine to find pulumi-resource-kubernetes. */
    bin: string;
    etcd: string;
    kubeApiserver: string;
    kubeControllerManager: string;
    kubectl: string;
    /** pulumi-resource-kubernetes, the plugin @pulumi/kubernetes's resources need. */
    plugin: string;
    /** Cilium's v2 CRDs from the github.com/cilium/cilium module, one YAML file each. */
    ciliumCrds: string;
    /** The CiliumNetworkPolicy CRD in there. */
    ciliumNetworkPolicyCrd: string;
}

let tools: KubernetesTools | undefined;

/**
 * The timeout for a hook that calls ensureKubernetesTools or startControlPlane: the tests build
 * the tools themselves (CI runs no separate step), and a cold build takes 15 to 30 minutes on 2
 * cores. Cached, the call returns at once.
 */
export const KUBERNETES_TOOLS_TIMEOUT_MS = 60 * 60_000;

/**
 * Runs scripts/bootstrap-kubernetes.sh once per process and returns the paths. A failed build
 * throws: never a skip. Its progress goes to stderr.
 */
export function ensureKubernetesTools(): KubernetesTools {
    if (tools) return tools;
    const out = execFileSync("bash", [path.join(PACKAGE_ROOT, "scripts", "bootstrap-kubernetes.sh")], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
    });
    const bin = out.trim().split("\n").pop()!;
    const ciliumCrds = path.join(bin, "..", "crds", "cilium");
    const found: KubernetesTools = {
        bin,
        etcd: path.join(bin, "etcd"),
        kubeApiserver: path.join(bin, "kube-apiserver"),
        kubeControllerManager: path.join(bin, "kube-controller-manager"),
        kubectl: path.join(bin, "kubectl"),
        plugin: path.join(bin, "pulumi-resource-kubernetes"),
        ciliumCrds,
        ciliumNetworkPolicyCrd: path.join(ciliumCrds, "ciliumnetworkpolicies.yaml"),
    };
    for (const [what, file] of Object.entries(found)) {
        if (!fs.existsSync(file)) throw new Error(`bootstrap-kubernetes.sh reported ${bin}, but its ${what} (${file}) is missing`);
    }
    tools = found;
    return found;
}

export interface ControlPlane {
    /** The kubeconfig of a system:masters user (a token), written to `path`. */
    kubeconfig: { path: string; text: string };
    /** https://127.0.0.1:PORT */
    server: string;
    tools: KubernetesTools;
    /** Runs kubectl against this control plane; returns stdout, throws with stderr on failure. */
    kubectl(...args: string[]): string;
    /** Creates or updates the CRDs in a YAML file and waits until each is Established; returns their names. */
    installCrds(file: string): Promise<string[]>;
    /** Stops the controller manager, the API server and etcd (SIGTERM by pid, then SIGKILL), and waits for each. */
    stop(): Promise<void>;
}

/** A port free on 127.0.0.1 now (the OS picks it). */
async function freePort(): Promise<number> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
}

interface Daemon {
    name: string;
    log: string;
    child: ChildProcess;
}

function startDaemon(name: string, program: string, args: string[], dir: string): Daemon {
    const log = path.join(dir, `${name}.log`);
    const fd = fs.openSync(log, "a");
    try {
        // stdin from /dev/null, stdout and stderr to the log: nothing of the test's pipes is held.
        const child = spawn(program, args, { cwd: dir, stdio: ["ignore", fd, fd] });
        child.on("error", () => undefined); // reported through exitCode and the log below
        return { name, log, child };
    } finally {
        fs.closeSync(fd);
    }
}

function tail(file: string, lines = 30): string {
    try {
        return fs.readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } catch {
        return "(no log)";
    }
}

async function stopDaemon(daemon: Daemon): Promise<void> {
    const { child } = daemon;
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
}

/** GET `url` with the token, trusting `ca`; resolves to the status and body, or undefined when nothing answers. */
function get(url: string, token: string, ca: string): Promise<{ status: number; body: string } | undefined> {
    return new Promise((resolve) => {
        const req = https.get(url, { ca, headers: { authorization: `Bearer ${token}` }, timeout: 5_000 }, (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (chunk: string) => (body += chunk));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("timeout", () => req.destroy());
        req.on("error", () => resolve(undefined));
    });
}

/**
 * Starts etcd, kube-apiserver and kube-controller-manager with their data, certificates, keys and
 * logs in `dir` (made if missing), waits until /readyz answers ok and returns the kubeconfig.
 * Call stop() in an after hook: it is also called here when the start fails.
 */
export async function startControlPlane(dir: string): Promise<ControlPlane> {
    ensureCommands(["openssl"], ["openssl"]);
    const found = ensureKubernetesTools();
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = (name: string) => path.join(dir, name);

    // Certificates: a CA and the API server's serving certificate for 127.0.0.1.
    const pki = new TestPki("kubernetes", file("pki"));
    pki.server("kube-apiserver", "IP:127.0.0.1,DNS:localhost");
    const ca = pki.read("ca.crt");
    // The key pair service-account tokens are signed and checked with.
    execFileSync("openssl", ["genrsa", "-out", file("sa.key"), "2048"], { stdio: ["ignore", "ignore", "pipe"] });
    execFileSync("openssl", ["rsa", "-in", file("sa.key"), "-pubout", "-out", file("sa.pub")], { stdio: ["ignore", "ignore", "pipe"] });
    // One user, in system:masters (allowed everything under RBAC); a throwaway token.
    const token = crypto.randomBytes(24).toString("hex");
    fs.writeFileSync(file("tokens.csv"), `${token},gpu-workers-test,gpu-workers-test,"system:masters"\n`, { mode: 0o600 });

    const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];
    const server = `https://127.0.0.1:${apiPort}`;
    const text = [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- name: test",
        "  cluster:",
        `    server: ${server}`,
        `    certificate-authority-data: ${Buffer.from(ca).toString("base64")}`,
        "users:",
        "- name: test",
        "  user:",
        `    token: ${token}`,
        "contexts:",
        "- name: test",
        "  context:",
        "    cluster: test",
        "    user: test",
        "current-context: test",
        "",
    ].join("\n");
    const kubeconfigPath = file("kubeconfig");
    fs.writeFileSync(kubeconfigPath, text, { mode: 0o600 });

    const daemons: Daemon[] = [];
    const stop = async () => {
        // The controller manager first (it talks to the API server), etcd last.
        for (const daemon of [...daemons].reverse()) await stopDaemon(daemon);
    };
    try {
        daemons.push(
            startDaemon(
                "etcd",
                found.etcd,
                [
                    "--name=test",
                    `--data-dir=${file("etcd-data")}`,
                    `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
                    `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
                    `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
                    `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
                    `--initial-cluster=test=http://127.0.0.1:${etcdPeer}`,
                    "--unsafe-no-fsync", // a throwaway store: speed over durability
                    "--log-level=warn",
                ],
                dir,
            ),
        );
        daemons.push(
            startDaemon(
                "kube-apiserver",
                found.kubeApiserver,
                [
                    `--etcd-servers=http://127.0.0.1:${etcdClient}`,
                    "--bind-address=127.0.0.1",
                    "--advertise-address=127.0.0.1",
                    `--secure-port=${apiPort}`,
                    `--tls-cert-file=${pki.file("kube-apiserver.crt")}`,
                    `--tls-private-key-file=${pki.file("kube-apiserver.key")}`,
                    `--client-ca-file=${pki.file("ca.crt")}`,
                    `--token-auth-file=${file("tokens.csv")}`,
                    "--authorization-mode=RBAC",
                    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                    `--service-account-key-file=${file("sa.pub")}`,
                    `--service-account-signing-key-file=${file("sa.key")}`,
                    "--service-cluster-ip-range=10.96.0.0/24",
                    // No kubelet serves the kubernetes Service's endpoints; nothing to keep in sync.
                    "--endpoint-reconciler-type=none",
                    // The device plugin's DaemonSet runs privileged.
                    "--allow-privileged=true",
                    `--cert-dir=${file("apiserver-certs")}`,
                    "--profiling=false",
                ],
                dir,
            ),
        );
        await waitReady(server, token, ca, daemons);
        daemons.push(
            startDaemon(
                "kube-controller-manager",
                found.kubeControllerManager,
                [
                    `--kubeconfig=${kubeconfigPath}`,
                    "--bind-address=127.0.0.1",
                    "--secure-port=0", // serves nothing: no port to pick, nothing listening
                    "--leader-elect=false",
                    `--service-account-private-key-file=${file("sa.key")}`,
                    `--root-ca-file=${pki.file("ca.crt")}`,
                    "--profiling=false",
                ],
                dir,
            ),
        );
    } catch (err) {
        await stop();
        throw err;
    }
    const kubectl = (...args: string[]): string => {
        try {
            return execFileSync(found.kubectl, args, {
                encoding: "utf8",
                env: { ...process.env, KUBECONFIG: kubeconfigPath },
                stdio: ["ignore", "pipe", "pipe"],
            });
        } catch (err) {
            const e = err as { stderr?: string; message: string };
            throw new Error(`kubectl ${args.join(" ")} failed: ${e.stderr?.trim() || e.message}`, { cause: err });
        }
    };
    const installCrds = async (crdFile: string): Promise<string[]> => {
        // Server-side: Cilium's CRDs are too big for the last-applied annotation of a client-side apply.
        const names = kubectl("apply", "--server-side", "-f", crdFile, "-o", "name")
            .trim()
            .split("\n")
            .filter((n) => n.startsWith("customresourcedefinition"));
        // Polled, not `kubectl wait`: that fails outright while a new CRD has no conditions yet.
        const deadline = Date.now() + 60_000;
        for (const name of names) {
            // Parsed here: kubectl's jsonpath filter fails outright while conditions is still null.
            const established = () => {
                const crd = JSON.parse(kubectl("get", name, "-o", "json")) as { status?: { conditions?: { type: string; status: string }[] | null } };
                return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") === true;
            };
            while (!established()) {
                if (Date.now() > deadline) throw new Error(`${name} from ${crdFile} was not Established within 60 s`);
                await new Promise((r) => setTimeout(r, 200));
            }
        }
        return names;
    };
    return { kubeconfig: { path: kubeconfigPath, text }, server, tools: found, kubectl, installCrds, stop };
}

/** Waits (up to 60 s) for /readyz to answer ok; fails early with the log of a daemon that exited. */
async function waitReady(server: string, token: string, ca: string, daemons: Daemon[]): Promise<void> {
    const deadline = Date.now() + 60_000;
    let last = "nothing answered";
    while (Date.now() < deadline) {
        const dead = daemons.find((d) => d.child.exitCode !== null || d.child.signalCode !== null);
        if (dead)
            throw new Error(`${dead.name} exited (${dead.child.exitCode ?? dead.child.signalCode}) before /readyz was ok; ${dead.log}:\n${tail(dead.log)}`);
        const answer = await get(`${server}/readyz`, token, ca);
        if (answer?.status === 200) return;
        if (answer) last = `${answer.status}: ${answer.body.trim().split("\n").slice(-5).join(" ")}`;
        await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`kube-apiserver at ${server} was not ready within 60 s (last answer: ${last}); logs in ${path.dirname(daemons[0].log)}`);
}
