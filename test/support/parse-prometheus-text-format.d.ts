declare module 'parse-prometheus-text-format' {
  /** Parses the Prometheus text exposition format into metric families. */
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
