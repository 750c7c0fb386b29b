/**
 * The Helm chart (charts/svc): values.schema.json accepts every example values file and
 * rejects typos and wrong types; every example renders, validates against the Kubernetes
 * schemas, and holds the objects its values ask for.
 *
 * Rendering uses the shared helm-render tool (helm itself cannot be installed here):
 * /work/shared/tools/helm-render/check-chart, or $HELM_RENDER_CHECK_CHART. Where the tool or
 * `go` is missing, the render tests are skipped and say so; in CI (CI=true) they fail instead.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

import Ajv from 'ajv';
import { parse, parseAllDocuments } from 'yaml';

import { GRPC_SERVICE_NAMES, SERVICE_NAMES } from '@svc/kit';
import { MODULES } from '@svc/stack';

import { withTools } from '../support/tools';

type Values = Record<string, unknown>;
type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
};

const ROOT = resolve(__dirname, '../..');
const CHART = join(ROOT, 'charts/svc');
const CHECK_CHART = process.env.HELM_RENDER_CHECK_CHART ?? '/work/shared/tools/helm-render/check-chart';
/** CRDs of the custom resources the chart may render (KEDA's ScaledObject), to validate them by schema. */
const CRDS = join(__dirname, 'crds');
const RELEASE = 'demo';
const NAMESPACE = 'svc-test';
const PREFIX = `${RELEASE}-svc`; // the chart's full name for a release that doesn't contain "svc"

/** The chart's components: the service catalogue's (packages/kit/src/catalogue.ts). */
const SERVICES: string[] = SERVICE_NAMES;
/** The gateway and the runtime (run workers) serve HTTP for their probes; the others gRPC. */
const HTTP_COMPONENTS = SERVICES.filter((s) => !(GRPC_SERVICE_NAMES as string[]).includes(s));
const GRPC_SERVICES: string[] = GRPC_SERVICE_NAMES;
/** The services with a schema of their own (their modules say so) migrate a database. */
const WITH_DATABASE: string[] = MODULES.filter((m) => m.schema).map((m) => m.name);

/** The example values files: charts/svc/ci/*.yaml and the collector example in deploy/. */
const VALUES_FILES = [
  ...readdirSync(join(CHART, 'ci'))
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(CHART, 'ci', f)),
  join(ROOT, 'deploy/otel-collector.yaml'),
];

const isMap = (v: unknown): v is Values => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Merges values files as helm does: maps merge key by key, null deletes, anything else replaces. */
function helmMerge(base: Values, over: Values): Values {
  const out: Values = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === null) delete out[key];
    else if (isMap(value) && isMap(out[key])) out[key] = helmMerge(out[key] as Values, value);
    else out[key] = value;
  }
  return out;
}

/** A service's settings as the chart computes them: `default` with the service's merged over it. */
function serviceConfig(values: Values, name: string): any {
  const merge = (dst: Values, src: Values): Values => {
    const out: Values = { ...dst };
    for (const [k, v] of Object.entries(src)) out[k] = isMap(v) && isMap(out[k]) ? merge(out[k] as Values, v) : v;
    return out;
  };
  const services = (values.services ?? {}) as Values;
  return merge((values.default ?? {}) as Values, (services[name] ?? {}) as Values);
}

const readYaml = (file: string): Values => (parse(readFileSync(file, 'utf8')) ?? {}) as Values;
const defaults = readYaml(join(CHART, 'values.yaml'));
const valuesWith = (file: string): Values => helmMerge(defaults, readYaml(file));

const ajv = new Ajv({ allErrors: true, allowUnionTypes: true });
const validate = ajv.compile(JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')));
const errorsOf = (values: Values): string => (validate(values) ? '' : ajv.errorsText(validate.errors, { separator: '\n' }));

describe('values.schema.json', () => {
  it('accepts values.yaml', () => {
    expect(errorsOf(defaults)).toBe('');
  });

  it.each(VALUES_FILES.map((f) => [relative(ROOT, f)]))('accepts %s merged over values.yaml', (file) => {
    expect(errorsOf(valuesWith(join(ROOT, file)))).toBe('');
  });

  function rejectedFor(values: Values, keyword: string): string[] {
    expect(validate(values)).toBe(false);
    return (validate.errors ?? []).filter((e) => e.keyword === keyword).map((e) => `${e.instancePath} ${JSON.stringify(e.params)}`);
  }

  it('rejects an unknown top-level key', () => {
    expect(rejectedFor(helmMerge(defaults, { replicaCount: 2 }), 'additionalProperties')).toContain(' {"additionalProperty":"replicaCount"}');
  });

  it('rejects an unknown key under services.gateway', () => {
    expect(rejectedFor(helmMerge(defaults, { services: { gateway: { replica: 2 } } }), 'additionalProperties')).toContain(
      '/services/gateway {"additionalProperty":"replica"}',
    );
  });

  it('rejects an unknown service and an unknown key deeper down', () => {
    expect(rejectedFor(helmMerge(defaults, { services: { billing: {} } }), 'additionalProperties')).toContain(
      '/services {"additionalProperty":"billing"}',
    );
    expect(rejectedFor(helmMerge(defaults, { default: { autoscaling: { targetCPU: 50 } } }), 'additionalProperties')).toContain(
      '/default/autoscaling {"additionalProperty":"targetCPU"}',
    );
  });

  it('rejects a wrong type', () => {
    expect(rejectedFor(helmMerge(defaults, { services: { keys: { replicas: 'two' } } }), 'type')).toContain(
      '/services/keys/replicas {"type":"integer"}',
    );
    expect(rejectedFor(helmMerge(defaults, { postgresql: { enabled: 'yes' } }), 'type')).toContain('/postgresql/enabled {"type":"boolean"}');
  });

  it('defaults the gateway to trusting no proxy, and rejects a malformed SVC_TRUST_PROXY', () => {
    expect((defaults.services as any).gateway.env.SVC_TRUST_PROXY).toBe('false');
    expect(rejectedFor(helmMerge(defaults, { services: { gateway: { env: { SVC_TRUST_PROXY: 'yes' } } } }), 'pattern')).toEqual([
      expect.stringContaining('/services/gateway/env/SVC_TRUST_PROXY'),
    ]);
    expect(validate(helmMerge(defaults, { services: { gateway: { env: { SVC_TRUST_PROXY: '1' } } } }))).toBe(true);
  });

  it('rejects a malformed bootstrap key and a short internal secret', () => {
    expect(rejectedFor(helmMerge(defaults, { auth: { bootstrapKey: `svc_${'A'.repeat(64)}` } }), 'pattern')).toHaveLength(1);
    expect(rejectedFor(helmMerge(defaults, { auth: { internalSecret: 'short' } }), 'pattern')).toHaveLength(1);
    expect(errorsOf(helmMerge(defaults, { auth: { bootstrapKey: `svc_${'ab'.repeat(32)}` } }))).toBe('');
  });
});

/**
 * check-chart needs the tool itself and Go to build it: without them the render tests are skipped
 * with a warning, and fail in CI (CI=true).
 */
const renderTools = withTools(
  'the chart render tests',
  {
    name: 'check-chart',
    install: 'provide /work/shared/tools/helm-render or point HELM_RENDER_CHECK_CHART at check-chart',
    missing: () => (existsSync(CHECK_CHART) ? undefined : `${CHECK_CHART} not found`),
  },
  {
    name: 'go',
    install: 'apt-get install -y golang-go (check-chart adds the Go libraries it builds with; .ci/run installs both)',
    missing: () => (spawnSync('go', ['version'], { encoding: 'utf8' }).status === 0 ? undefined : '`go` is not installed'),
  },
);
const renderIt = renderTools.test;

/** Renders and validates the chart (check-chart) with helm flags, returning the objects. */
function render(...flags: string[]): { status: number | null; output: string; objects: Manifest[] } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-chart-'));
  try {
    const out = join(dir, 'rendered.yaml');
    const result = spawnSync(CHECK_CHART, ['-o', out, '--crds', CRDS, RELEASE, CHART, '-n', NAMESPACE, ...flags], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
    const objects = existsSync(out)
      ? parseAllDocuments(readFileSync(out, 'utf8'))
          .map((d) => d.toJS() as Manifest | null)
          .filter((m): m is Manifest => m !== null)
      : [];
    return { status: result.status, output, objects };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.each(VALUES_FILES.map((f) => [relative(ROOT, f), f]))('helm template with %s', (_name, file) => {
  let rendered: ReturnType<typeof render>;
  const values = valuesWith(file);
  const find = (kind: string, name: string) => rendered.objects.find((o) => o.kind === kind && o.metadata.name === name);

  beforeAll(() => {
    if (renderTools.available) rendered = render('-f', file);
  }, 180_000);

  renderIt('renders and validates (check-chart exits 0)', () => {
    if (rendered.status !== 0) console.error(rendered.output);
    expect(rendered.status).toBe(0);
    expect(rendered.objects.length).toBeGreaterThan(0);
  });

  renderIt('has a Deployment, Service and PodDisruptionBudget per enabled service, and an HPA when autoscaling', () => {
    for (const name of SERVICES) {
      const cfg = serviceConfig(values, name);
      const objectName = `${PREFIX}-${name}`;
      const deployment = find('Deployment', objectName);
      if (!cfg.enabled) {
        expect({ name, deployment }).toEqual({ name, deployment: undefined });
        continue;
      }
      expect({ name, deployment: !!deployment, service: !!find('Service', objectName) }).toEqual({
        name,
        deployment: true,
        service: true,
      });
      expect({ name, pdb: !!find('PodDisruptionBudget', objectName) }).toEqual({ name, pdb: cfg.pdb.enabled });
      const hpa = find('HorizontalPodAutoscaler', objectName);
      const keda = ((values.keda ?? {}) as Values)[name] as { enabled?: boolean } | undefined;
      if (keda?.enabled) {
        // KEDA makes its own HPA from the ScaledObject; the chart's would fight it.
        expect({ name, hpa, replicas: deployment!.spec.replicas }).toEqual({ name, hpa: undefined, replicas: undefined });
        expect({ name, scaledObject: find('ScaledObject', objectName)?.spec.scaleTargetRef.name }).toEqual({ name, scaledObject: objectName });
      } else if (cfg.autoscaling.enabled) {
        expect({ name, hpa: hpa?.apiVersion, min: hpa?.spec.minReplicas, max: hpa?.spec.maxReplicas }).toEqual({
          name,
          hpa: 'autoscaling/v2',
          min: cfg.autoscaling.minReplicas,
          max: cfg.autoscaling.maxReplicas,
        });
        expect({ name, replicas: deployment!.spec.replicas }).toEqual({ name, replicas: undefined });
      } else {
        expect({ name, hpa }).toEqual({ name, hpa: undefined });
        expect({ name, replicas: deployment!.spec.replicas }).toEqual({ name, replicas: cfg.replicas });
      }
      if (!keda?.enabled) expect({ name, scaledObject: find('ScaledObject', objectName) }).toEqual({ name, scaledObject: undefined });
      const migration = find('Job', `${PREFIX}-${name}-migrate`);
      const wantsMigration = WITH_DATABASE.includes(name) && cfg.migrations.enabled;
      expect({ name, migration: !!migration }).toEqual({ name, migration: wantsMigration });
      if (migration) {
        expect(migration.metadata.annotations?.['helm.sh/hook']).toMatch(/pre-upgrade/);
        const env = migration.spec.template.spec.containers[0].env as { name: string; value?: string }[];
        expect(env).toContainEqual({ name: 'SVC_MIGRATE_ONLY', value: 'true' });
        expect(env).toContainEqual({ name: 'SVC_SERVICE', value: name });
        expect(env.find((e) => e.name === 'SVC_INTERNAL_SECRET')).toHaveProperty('valueFrom.secretKeyRef.key', 'internal-secret');
      }
    }
  });

  renderIt('gives every pod the environment contract, secure settings and its probes', () => {
    const deployments = rendered.objects.filter((o) => o.kind === 'Deployment' && o.metadata.labels?.['svc.dev/role'] !== 'collector');
    expect(deployments.length).toBeGreaterThan(0);
    const internalSecretRefs = new Set<string>();
    for (const deployment of deployments) {
      const name = deployment.metadata.labels?.['app.kubernetes.io/component'] as string;
      const pod = deployment.spec.template.spec;
      const container = pod.containers[0];
      const env = new Map<string, any>(container.env.map((e: any) => [e.name, e]));
      expect(env.get('SVC_SERVICE')?.value).toBe(name);
      expect(env.get('OTEL_SERVICE_NAME')?.value).toBe(`svc-${name}`);
      expect(env.get('PORT')?.value).toBe('8080');
      expect(env.get('GRPC_PORT')?.value).toBe('50051');
      expect(env.get('SVC_DATA_DIR')?.value).toBe('/data');
      for (const target of GRPC_SERVICES) {
        expect(env.get(`SVC_${target.toUpperCase()}_ADDR`)?.value).toBe(`${PREFIX}-${target}:50051`);
      }
      for (const variable of ['DATABASE_URL', 'REDIS_URL', 'NATS_URL', 'S3_ACCESS_KEY', 'S3_SECRET_KEY', 'SVC_BOOTSTRAP_KEY']) {
        expect({ variable, secret: !!env.get(variable)?.valueFrom?.secretKeyRef }).toEqual({ variable, secret: true });
      }
      for (const variable of ['S3_ENDPOINT', 'S3_BUCKET', 'S3_REGION', 'LOG_LEVEL', 'OTEL_RESOURCE_ATTRIBUTES']) {
        expect({ variable, value: typeof env.get(variable)?.value }).toEqual({ variable, value: 'string' });
      }
      const ref = env.get('SVC_INTERNAL_SECRET')?.valueFrom?.secretKeyRef;
      internalSecretRefs.add(`${ref?.name}/${ref?.key}`);

      expect(pod.automountServiceAccountToken).toBe(false);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
      expect(container.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(container.volumeMounts.map((m: any) => m.mountPath).sort()).toEqual(['/data', '/tmp']);
      // Rolling restarts (docs/deploy.md#rolling-restarts): a new pod ready before an old one goes;
      // preStop keeps the old one serving while it leaves its endpoints; SIGTERM's drain
      // (SVC_SHUTDOWN_GRACE_MS, 10 s, plus 5 s) fits in what is left of the grace period.
      const cfg = serviceConfig(values, name);
      expect(deployment.spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: cfg.rollingUpdate });
      expect(pod.terminationGracePeriodSeconds).toBe(cfg.terminationGracePeriodSeconds);
      expect(container.lifecycle.preStop.exec.command).toEqual(['sleep', String(cfg.preStopSleepSeconds)]);
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(cfg.preStopSleepSeconds + 10 + 5);
      if (HTTP_COMPONENTS.includes(name)) {
        expect(container.livenessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
        expect(container.readinessProbe.httpGet).toEqual({ path: '/ready', port: 'http' });
      } else {
        expect(container.readinessProbe.grpc).toEqual({ port: 50051 });
      }
    }
    // One HMAC secret for every pod.
    expect([...internalSecretRefs]).toHaveLength(1);
  });

  renderIt('generates a well-formed bootstrap key and internal secret unless an existing Secret is named', () => {
    const auth = find('Secret', `${PREFIX}-auth`);
    if ((values.auth as Values).existingSecret) {
      expect(auth).toBeUndefined();
      return;
    }
    const decode = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString('utf8');
    expect(decode(auth?.data?.['bootstrap-key'])).toMatch(/^svc_[0-9a-f]{64}$/);
    expect(decode(auth?.data?.['internal-secret']).length).toBeGreaterThanOrEqual(32);
  });

  renderIt('limits who reaches what with NetworkPolicies', () => {
    const gateway = find('NetworkPolicy', `${PREFIX}-gateway`);
    expect(gateway?.spec.ingress).toHaveLength(1);
    expect(gateway?.spec.ingress[0].ports).toEqual([{ port: 8080, protocol: 'TCP' }]);
    const services = find('NetworkPolicy', `${PREFIX}-services`);
    expect(services?.spec.ingress[0].ports).toEqual([{ port: 50051, protocol: 'TCP' }]);
    expect(services?.spec.ingress[0].from[0].podSelector.matchExpressions[0].values).toEqual(['gateway', 'service']);
    for (const backend of ['postgresql', 'redis', 'nats', 'minio']) {
      const bundled = (values[backend] as Values).enabled === true;
      expect({ backend, statefulSet: !!find('StatefulSet', `${PREFIX}-${backend}`) }).toEqual({ backend, statefulSet: bundled });
      expect({ backend, policy: !!find('NetworkPolicy', `${PREFIX}-${backend}`) }).toEqual({ backend, policy: bundled });
    }
  });
});

describe('helm template with --set overrides', () => {
  const containerOf = (objects: Manifest[], name: string) =>
    objects.find((o) => o.kind === 'Deployment' && o.metadata.name === `${PREFIX}-${name}`)?.spec.template.spec.containers[0];
  const envOf = (objects: Manifest[], name: string) =>
    new Map<string, any>((containerOf(objects, name)?.env ?? []).map((e: any) => [e.name, e.value ?? e.valueFrom]));

  renderIt('drops every object of a disabled service', () => {
    const { status, output, objects } = render('--set', 'services.trading.enabled=false');
    expect({ status, output: status === 0 ? '' : output }).toEqual({ status: 0, output: '' });
    expect(objects.filter((o) => o.metadata.labels?.['app.kubernetes.io/component']?.startsWith('trading'))).toEqual([]);
    expect(containerOf(objects, 'keys')).toBeDefined();
  });

  renderIt("merges env by name: default.env, then the service's, over the chart's; null removes", () => {
    const { status, objects } = render(
      '--set-json',
      'default.env={"SVC_TRADING_ADDR":"trading.example.internal:443","EXTRA":"1"}',
      '--set-json',
      'services.keys.env={"LOG_LEVEL":"debug","EXTRA":null,"FROM_SECRET":{"valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}}',
    );
    expect(status).toBe(0);
    const keys = envOf(objects, 'keys');
    const drive = envOf(objects, 'drive');
    expect(keys.get('SVC_TRADING_ADDR')).toBe('trading.example.internal:443');
    expect(keys.get('LOG_LEVEL')).toBe('debug');
    expect(keys.has('EXTRA')).toBe(false);
    expect(keys.get('FROM_SECRET')).toEqual({ secretKeyRef: { name: 's', key: 'k' } });
    expect(keys.get('SVC_SERVICE')).toBe('keys'); // the chart's variables are still there
    expect(drive.get('EXTRA')).toBe('1');
    expect(drive.get('LOG_LEVEL')).toBe('info');
  });

  renderIt("sets the models service's first-party settings from models.firstParty, on the models pods only", () => {
    expect(envOf(render().objects, 'models').has('SVC_MODELS_FIRST_PARTY_URL')).toBe(false);
    const { status, objects } = render('--set', 'models.firstParty.url=http://vllm.inference:8000/v1', '--set', 'models.firstParty.model=qwen');
    expect(status).toBe(0);
    const models = envOf(objects, 'models');
    expect([models.get('SVC_MODELS_FIRST_PARTY_URL'), models.get('SVC_MODELS_FIRST_PARTY_MODEL')]).toEqual(['http://vllm.inference:8000/v1', 'qwen']);
    expect(envOf(objects, 'gateway').has('SVC_MODELS_FIRST_PARTY_URL')).toBe(false);
    expect(errorsOf(helmMerge(defaults, { models: { firstParty: { url: 'vllm:8000' } } }))).toMatch(/firstParty\/url/);
  });

  renderIt("gives every models and trading pod the same KEKs: the auth Secret's, or the Secret named in models.kek / trading.kek", () => {
    const { status, objects } = render();
    expect(status).toBe(0);
    const auth = objects.find((o) => o.kind === 'Secret' && o.metadata.name === `${PREFIX}-auth`)!;
    for (const [service, variable, key] of [
      ['models', 'SVC_MODELS_KEK', 'models-kek'],
      ['trading', 'SVC_TRADING_KEK', 'trading-kek'],
    ]) {
      expect(envOf(objects, service).get(variable)).toEqual({ secretKeyRef: { name: `${PREFIX}-auth`, key } });
      expect(Buffer.from(auth.data![key], 'base64').toString('utf8')).toMatch(/^k1:[A-Za-z0-9+/]{43}=$/);
      expect(envOf(objects, 'gateway').has(variable)).toBe(false);
    }
    const own = render(
      '--set',
      'auth.existingSecret=platform',
      '--set',
      'trading.kek.existingSecret=venues',
      '--set',
      'models.kek.existingSecret=providers',
    );
    expect(own.status).toBe(0);
    expect(envOf(own.objects, 'trading').get('SVC_TRADING_KEK')).toEqual({ secretKeyRef: { name: 'venues', key: 'trading-kek' } });
    expect(envOf(own.objects, 'models').get('SVC_MODELS_KEK')).toEqual({ secretKeyRef: { name: 'providers', key: 'models-kek' } });
  });

  renderIt('fails with a message when a backend is neither bundled nor external', () => {
    const { status, output } = render('--set', 'postgresql.enabled=false');
    expect(status).not.toBe(0);
    expect(output).toMatch(/postgresql: no backend/);
  });
});

/**
 * KEDA (charts/svc/ci/keda-values.yaml): ScaledObjects for the runtime on its work queue and the
 * gateway on its request rate, validated by check-chart against test/chart/crds (the ScaledObject
 * schema); their triggers use only the parameters KEDA's scalers take.
 */
describe('KEDA ScaledObjects', () => {
  const file = join(CHART, 'ci/keda-values.yaml');
  /** The metadata parameters of KEDA 2.x's nats-jetstream and prometheus scalers. */
  const SCALER_PARAMETERS: Record<string, string[]> = {
    'nats-jetstream': ['natsServerMonitoringEndpoint', 'account', 'stream', 'consumer', 'lagThreshold', 'activationLagThreshold', 'useHttps'],
    prometheus: ['serverAddress', 'query', 'threshold', 'activationThreshold', 'namespace', 'customHeaders', 'ignoreNullValues', 'unsafeSsl'],
  };
  const scaledObject = (objects: Manifest[], name: string) =>
    objects.find((o) => o.kind === 'ScaledObject' && o.metadata.name === `${PREFIX}-${name}`);

  renderIt('are absent unless asked for', () => {
    expect(render().objects.filter((o) => o.kind === 'ScaledObject')).toEqual([]);
  });

  renderIt('scale the runtime on the work queue and the gateway on its request rate; the HPA stays for the others', () => {
    const { status, output, objects } = render('-f', file);
    expect({ status, output: status === 0 ? '' : output }).toEqual({ status: 0, output: '' });
    const runtime = scaledObject(objects, 'runtime')!;
    expect(runtime.apiVersion).toBe('keda.sh/v1alpha1');
    expect(runtime.spec).toMatchObject({ minReplicaCount: 1, maxReplicaCount: 8 });
    expect(runtime.spec.triggers).toEqual([
      {
        type: 'nats-jetstream',
        name: 'pending-runs',
        metadata: {
          natsServerMonitoringEndpoint: `${PREFIX}-nats.${NAMESPACE}.svc.cluster.local:8222`,
          account: '$G',
          stream: 'PROD_WORK', // <SVC_NAMESPACE>_WORK, the work queues' stream (packages/kit/src/storage/bus.ts)
          consumer: 'work_agents_runs', // the durable consumer of the agents.runs queue
          lagThreshold: '5',
          activationLagThreshold: '0',
        },
      },
    ]);
    const gateway = scaledObject(objects, 'gateway')!;
    expect(gateway.spec.triggers[0]).toMatchObject({ type: 'prometheus', metadata: { threshold: '100' } });
    expect(gateway.spec.triggers[0].metadata.query).toBe(`sum(rate(http_server_request_duration_seconds_count{job="${RELEASE}/svc-gateway"}[2m]))`);
    for (const so of [runtime, gateway]) {
      for (const trigger of so.spec.triggers) {
        expect(Object.keys(trigger.metadata).filter((k) => !SCALER_PARAMETERS[trigger.type].includes(k))).toEqual([]);
      }
    }
    expect(objects.filter((o) => o.kind === 'HorizontalPodAutoscaler').map((o) => o.metadata.name)).toEqual([`${PREFIX}-drive`]);
  });

  renderIt('fails with a message when the gateway has no Prometheus, or the runtime an external NATS without its monitoring endpoint', () => {
    const gateway = render('--set', 'keda.gateway.enabled=true');
    expect(gateway.status).not.toBe(0);
    expect(gateway.output).toMatch(/keda\.gateway\.prometheusServerAddress is required/);
    const runtime = render('--set', 'keda.runtime.enabled=true', '--set', 'nats.enabled=false', '--set', 'externalNats.url=nats://nats.example:4222');
    expect(runtime.status).not.toBe(0);
    expect(runtime.output).toMatch(/keda\.runtime\.natsMonitoringEndpoint is required/);
  });

  it('rejects unknown keys and bad values in values.schema.json', () => {
    expect(errorsOf(helmMerge(defaults, { keda: { runtime: { lag: 5 } } }))).toMatch(/additional properties/);
    expect(errorsOf(helmMerge(defaults, { keda: { models: { enabled: true } } }))).toMatch(/additional properties/);
    expect(errorsOf(helmMerge(defaults, { keda: { runtime: { natsMonitoringEndpoint: 'http://nats:8222/jsz' } } }))).toMatch(/pattern/);
    expect(errorsOf(helmMerge(defaults, { keda: { gateway: { threshold: 0 } } }))).toMatch(/threshold/);
  });
});
