#!/usr/bin/env python3
"""chart.py: draws clops-bench's results (its --csv files) as one PNG, rate against size.

    python3 chart.py [--width PX] [--height PX] [--dpi DPI] [--title TEXT] CSV [CSV...] OUT.png
    python3 chart.py --check

One subplot per (area, what n counts, dtype, rate unit), rate against n on a log2 axis, one line
per (impl, op): clops against each peer measured on the same device. clops' lines come first
(the first colour, blue), then the peers' by name; each op has its own marker. Several CSV files
may be given, so that a peer's numbers from another program (impl = cublas, say) join
clops-bench's; the columns are described in hosts/bench/README.md. The same inputs and options give the same
PNG, byte for byte (no timestamp or version in the file).

Exit status: 0 drawn; 1 an input could not be read or is not results; 2 usage error;
3 matplotlib is not installed for this python3 (--check asks only that).
"""

import argparse
import csv
import math
import statistics
import sys
import textwrap

EXIT_BAD_INPUT = 1
EXIT_NO_MATPLOTLIB = 3

# Columns every row must have, and those with a default when a file lacks them.
REQUIRED = ("area", "dtype", "impl", "n", "rate", "unit")
DEFAULTS = {"op": None, "n_unit": "matrix order", "time_ms": "", "device": "", "date": ""}

# Pixels per subplot when --width or --height is not given; --dpi does not change them.
SUBPLOT_WIDTH, SUBPLOT_HEIGHT, MAX_COLUMNS = 640, 480, 2
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


class BadInput(Exception):
    pass


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="chart.py",
        description="Draws clops-bench --csv results (and peers' rows in the same columns) "
        "as a PNG: rate against n, one subplot per area and dtype, one line per impl.",
    )
    parser.add_argument("--check", action="store_true",
                        help="only check that matplotlib can be imported (exit 0, or 3)")
    parser.add_argument("--width", type=int, metavar="PX",
                        help=f"image width in pixels (default {SUBPLOT_WIDTH} a subplot column)")
    parser.add_argument("--height", type=int, metavar="PX",
                        help=f"image height in pixels (default {SUBPLOT_HEIGHT} a subplot row)")
    parser.add_argument("--dpi", type=int, default=100,
                        help="dots per inch: the size of text and lines in pixels (default 100)")
    parser.add_argument("--title", help="the figure's title (default: the devices and the dates)")
    parser.add_argument("files", nargs="*", metavar="CSV [CSV...] OUT.png")
    args = parser.parse_args(argv)
    if args.check:
        return args
    if len(args.files) < 2:
        parser.error("wants at least one CSV file and the PNG to write")
    for name, value in (("--width", args.width), ("--height", args.height), ("--dpi", args.dpi)):
        if value is not None and not 1 <= value <= 20000:
            parser.error(f"{name} wants 1 to 20000, not {value}")
    args.inputs, args.output = args.files[:-1], args.files[-1]
    return args


def import_matplotlib():
    """pyplot with the Agg backend (no display needed), or exit 3 with what to install."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
        import matplotlib.ticker as ticker
    except ImportError as error:
        print(f"chart.py: matplotlib is not installed for {sys.executable} ({error}); "
              "Debian/Ubuntu: apt-get install python3-matplotlib", file=sys.stderr)
        sys.exit(EXIT_NO_MATPLOTLIB)
    return pyplot, ticker


# ---- reading ---------------------------------------------------------------------------------

def positive_number(text, convert, what, where):
    try:
        value = convert(text)
    except ValueError:
        raise BadInput(f"{where}: {what} '{text}' is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise BadInput(f"{where}: {what} '{text}' is not a positive number")
    return value


def read_rows(path):
    """The rows of one results file, checked, with the optional columns filled in."""
    try:
        with open(path, newline="", encoding="utf-8") as file:
            reader = csv.DictReader(file)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise BadInput(f"{path}: no column {', '.join(missing)} in the header row "
                               f"(it must name at least {', '.join(REQUIRED)})")
            rows = []
            for row in reader:
                where = f"{path}:{reader.line_num}"
                if None in row or any(row[c] is None or row[c] == "" for c in REQUIRED):
                    raise BadInput(f"{where}: the row's values do not match the header's columns")
                row = {k: (v if v is not None else "") for k, v in row.items()}
                for column, default in DEFAULTS.items():
                    if not row.get(column):
                        row[column] = default if default is not None else row["area"]
                row["n"] = positive_number(row["n"], int, "n", where)
                row["rate"] = positive_number(row["rate"], float, "rate", where)
                rows.append(row)
    except OSError as error:
        raise BadInput(f"{path}: {error.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as error:
        raise BadInput(f"{path}: not a CSV file ({error})") from None
    if not rows:
        raise BadInput(f"{path}: no results, only a header")
    return rows


def unique(values):
    """The values in the order they first appear, each once."""
    return list(dict.fromkeys(values))


# ---- drawing ---------------------------------------------------------------------------------

def figure_title(rows):
    devices = unique(r["device"] for r in rows if r["device"])
    dates = sorted({r["date"][:10] for r in rows if r["date"]})
    when = (dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}") if dates else \
        "date not recorded"
    return f"clops-bench on {'; '.join(devices) or 'an unnamed device'}, {when}"


def line_order(rows):
    """The subplot's lines, (impl, op): clops first, then the peers by name, each impl's ops
    in the order they were measured. Where every subplot has the same impls (the usual case),
    an impl has the same colour in each."""
    lines = unique((r["impl"], r["op"]) for r in rows)
    return sorted(lines, key=lambda line: (line[0] != "clops", line[0]))


def subplot_title(key, keys):
    area, n_unit, dtype, _ = key
    # An area whose rows count n in more than one way (memory: elements, matrix order) says
    # which subplot is which.
    split = len({k[1] for k in keys if k[0] == area}) > 1
    return f"{area}, {dtype}" + (f" (n = {n_unit})" if split else "")


def set_log2_axis(axis, ticker, sizes):
    axis.set_xscale("log", base=2)
    if len(sizes) <= 12:
        # The measured sizes themselves, which are rarely powers of two in a test.
        axis.xaxis.set_major_locator(ticker.FixedLocator(sizes))
        axis.xaxis.set_major_formatter(ticker.FixedFormatter([f"{n:g}" for n in sizes]))
        axis.xaxis.set_minor_locator(ticker.NullLocator())
    if len(sizes) == 1:
        axis.set_xlim(sizes[0] / 2, sizes[0] * 2)


def draw_subplot(axis, ticker, key, keys, rows, palette):
    area, n_unit, _, unit = key
    lines = line_order(rows)
    ops = unique(op for _, op in lines)
    for index, (impl, op) in enumerate(lines):
        points = {}
        for r in rows:
            if (r["impl"], r["op"]) == (impl, op):
                points.setdefault(r["n"], []).append(r["rate"])
        sizes = sorted(points)
        # Repeated runs of one size are combined by their median.
        rates = [statistics.median(points[n]) for n in sizes]
        # The op is named unless it is the area's one operation (gemm's "gemm").
        label = impl if ops == [area] else f"{impl} {op}"
        k = ops.index(op)
        axis.plot(sizes, rates, label=label, color=palette[index % len(palette)],
                  marker=MARKERS[k % len(MARKERS)], linewidth=1.8, markersize=6)
    set_log2_axis(axis, ticker, sorted({r["n"] for r in rows}))
    axis.set_ylim(bottom=0, top=max(r["rate"] for r in rows) * 1.12)
    axis.set_title(subplot_title(key, keys))
    axis.set_xlabel(f"n: {n_unit} (log2 scale)")
    axis.set_ylabel(f"rate ({unit})")
    axis.grid(True, which="major", alpha=0.35)
    axis.legend(loc="best", fontsize="small")


def draw(rows, args):
    pyplot, ticker = import_matplotlib()
    keys = unique((r["area"], r["n_unit"], r["dtype"], r["unit"]) for r in rows)
    columns = min(MAX_COLUMNS, len(keys))
    grid_rows = math.ceil(len(keys) / columns)
    width = args.width or SUBPLOT_WIDTH * columns
    height = args.height or SUBPLOT_HEIGHT * grid_rows
    # Agg truncates width / dpi * dpi to whole pixels: half a pixel more gives exactly `width`.
    # The constrained layout keeps the title, labels and legends clear of one another.
    figure = pyplot.figure(figsize=((width + 0.5) / args.dpi, (height + 0.5) / args.dpi),
                           dpi=args.dpi, constrained_layout=True)
    palette = pyplot.get_cmap("tab10").colors
    for index, key in enumerate(keys):
        axis = figure.add_subplot(grid_rows, columns, index + 1)
        subplot_rows = [r for r in rows if (r["area"], r["n_unit"], r["dtype"], r["unit"]) == key]
        draw_subplot(axis, ticker, key, keys, subplot_rows, palette)
    title = args.title if args.title is not None else figure_title(rows)
    # About one character per 9 pixels at 100 dpi: a long list of devices wraps, not clips.
    wrap = max(20, int(width / (9 * args.dpi / 100)))
    figure.suptitle("\n".join(textwrap.wrap(title, wrap)), fontsize="large")
    figure.savefig(args.output, format="png", dpi=args.dpi, metadata={"Software": None})
    pyplot.close(figure)


def main(argv):
    args = parse_arguments(argv)
    if args.check:
        import_matplotlib()
        return 0
    try:
        rows = [row for path in args.inputs for row in read_rows(path)]
    except BadInput as error:
        print(f"chart.py: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        draw(rows, args)
    except OSError as error:
        print(f"chart.py: cannot write {args.output}: {error.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
