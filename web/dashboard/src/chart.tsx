// The overview's picture: inline SVG bar charts of GET /dashboard/v1/overview/chart, drawn here (no library, no request elsewhere, no inline style).
import type { ResponseBody } from "./api.ts";

export type OverviewChartData = ResponseBody<"DashboardOverviewChart">;

const WIDTH = 600;
const HEIGHT = 200;
const LEFT = 8;
const BOTTOM = 30;
const TOP = 30;

/** "2026-11-26" as "Nov 26", in UTC like the server's days. */
function shortDay(day: string): string {
  return new Date(`${day}T00:00:00Z`).toLocaleDateString("en", { month: "short", day: "numeric", timeZone: "UTC" });
}

interface Segment {
  value: number;
  className: string;
  label: string;
}

/** One bar per day, each a stack of segments, scaled to the tallest day. Amounts only size the bars. */
function Bars({
  title,
  days,
  stacks,
  unit,
}: {
  title: string;
  days: string[];
  stacks: Segment[][];
  /** Names the tallest day's value, drawn at the top ("150 USDT"). */
  unit: (max: number) => string;
}) {
  const max = Math.max(0, ...stacks.map((s) => s.reduce((sum, seg) => sum + seg.value, 0)));
  const plot = HEIGHT - TOP - BOTTOM;
  const step = (WIDTH - LEFT * 2) / Math.max(1, days.length);
  const barWidth = Math.max(2, step * 0.7);
  return (
    <svg class="chart" viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={title}>
      <title>{title}</title>
      <line class="axis" x1={LEFT} x2={WIDTH - LEFT} y1={HEIGHT - BOTTOM} y2={HEIGHT - BOTTOM} />
      {stacks.map((stack, i) => {
        let y = HEIGHT - BOTTOM;
        const x = LEFT + i * step + (step - barWidth) / 2;
        return (
          <g key={days[i]}>
            {stack
              .filter((seg) => seg.value > 0)
              .map((seg) => {
                const h = max === 0 ? 0 : Math.max(1, (seg.value / max) * plot);
                y -= h;
                return (
                  <rect key={seg.className} class={seg.className} x={x} y={y} width={barWidth} height={h}>
                    <title>{`${shortDay(days[i] ?? "")}: ${seg.label}`}</title>
                  </rect>
                );
              })}
          </g>
        );
      })}
      {max > 0 && (
        <text class="tick" x={LEFT} y={TOP - 10}>
          {`highest day: ${unit(max)}`}
        </text>
      )}
      <line class="axis faint" x1={LEFT} x2={WIDTH - LEFT} y1={TOP} y2={TOP} />
      <text class="tick" x={LEFT} y={HEIGHT - 6}>
        {shortDay(days[0] ?? "")}
      </text>
      <text class="tick end" x={WIDTH - LEFT} y={HEIGHT - 6}>
        {shortDay(days.at(-1) ?? "")}
      </text>
    </svg>
  );
}

export function OverviewCharts({ chart }: { chart: OverviewChartData }) {
  const days = chart.outcomes.map((o) => o.day);
  const sum = (key: "completed" | "expired" | "other") => chart.outcomes.reduce((n, o) => n + o[key], 0);
  const totals = { completed: sum("completed"), expired: sum("expired"), other: sum("other") };
  return (
    <div class="charts">
      {chart.volume.length === 0 ? (
        <figure class="card chart-card">
          <figcaption>
            <strong>Volume received</strong> <span class="muted">last 30 days</span>
          </figcaption>
          <p class="muted">No invoice was paid in the last 30 days.</p>
        </figure>
      ) : (
        chart.volume.map((v) => (
          <figure class="card chart-card" key={v.currency} data-testid={`volume-${v.currency}`}>
            <figcaption>
              <strong>Volume received, {v.currency}</strong>{" "}
              <span class="muted">
                {v.total} {v.currency} in the last 30 days, by the day the invoice was created
              </span>
            </figcaption>
            <Bars
              title={`${v.currency} received per day from ${chart.from} to ${chart.to}: ${v.total} in all`}
              days={days}
              stacks={v.perDay.map((amount) => [
                { value: Number(amount), className: "bar volume", label: `${amount} ${v.currency}` },
              ])}
              unit={() => `${v.perDay.reduce((a, b) => (Number(b) > Number(a) ? b : a), "0")} ${v.currency}`}
            />
          </figure>
        ))
      )}
      <figure class="card chart-card" data-testid="outcomes">
        <figcaption>
          <strong>Invoice outcomes</strong> <span class="muted">invoices created in the last 30 days</span>
        </figcaption>
        <Bars
          title={`Invoices created per day from ${chart.from} to ${chart.to}: ${totals.completed} completed, ${totals.expired} expired, ${totals.other} other`}
          days={days}
          stacks={chart.outcomes.map((o) => [
            { value: o.completed, className: "bar completed", label: `${o.completed} completed` },
            { value: o.expired, className: "bar expired", label: `${o.expired} expired` },
            { value: o.other, className: "bar other", label: `${o.other} other` },
          ])}
          unit={(max) => `${max} invoice${max === 1 ? "" : "s"}`}
        />
        <ul class="legend">
          <li>
            <span class="swatch completed" aria-hidden="true" /> Completed: {totals.completed}
          </li>
          <li>
            <span class="swatch expired" aria-hidden="true" /> Expired (also part-paid): {totals.expired}
          </li>
          <li>
            <span class="swatch other" aria-hidden="true" /> Other (open or under review): {totals.other}
          </li>
        </ul>
      </figure>
    </div>
  );
}
