#!/usr/bin/env python3
"""Regenerate schedule/testdata/golden.jsonl: the reference occurrences of
about 2,000 refresh schedules, computed by python-dateutil.

    python3 scripts/gen-rrule-golden.py            # writes the file
    python3 scripts/gen-rrule-golden.py --check    # fails when it would change

The output is deterministic: every random choice comes from one seeded
generator and nothing depends on the clock. Needs python-dateutil (Debian:
python3-dateutil) and the system zone database (Python's zoneinfo).

Each line is one JSON object:

    {"id": 17, "family": "dst", "text": "DTSTART;TZID=...\\nRRULE:...",
     "from": "20240310T050000Z", "horizon": "20640101T000000Z",
     "want": ["20240310T073000Z", ...]}

"want" lists the first occurrences (at most 20) of the recurrence set
(RRULE + RDATE - EXDATE, RFC 5545 section 3.8.5) strictly after "from" and
not after "horizon"; fewer than 20 means the set has no further occurrence
before the horizon. A line with "refuse" instead of "want" is a schedule the
engine deliberately refuses (a documented limit); the value is a substring of
the expected error.

dateutil walks wall-clock times. Each wall time is turned into an instant as
RFC 5545 section 3.3.5 says: a time that does not exist (spring forward) is
read with the UTC offset from before the gap, a time that occurs twice means
its first occurrence. That is Python's fold=0 (PEP 495). A floating time is
read as UTC; an all-day value (VALUE=DATE) is midnight in the rule's zone.
"""

import argparse
import datetime as dt
import json
import os
import random
import sys
import time
import types
from zoneinfo import ZoneInfo

from dateutil import rrule as du

SEED = 20240616
OUT = os.path.join(os.path.dirname(__file__), "..", "schedule", "testdata", "golden.jsonl")
MAX_OCC = 20
UTC = dt.timezone.utc

ZONES = [
    "America/New_York", "Europe/Berlin", "Europe/London", "Europe/Dublin",
    "Australia/Sydney", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Chatham",
    "Pacific/Apia", "America/Sao_Paulo", "America/Santiago", "Asia/Tehran",
    "America/St_Johns", "Asia/Kolkata", "Africa/Cairo", "America/Havana",
]
FREQS = ["YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY", "SECONDLY"]
DU_FREQ = {"YEARLY": du.YEARLY, "MONTHLY": du.MONTHLY, "WEEKLY": du.WEEKLY, "DAILY": du.DAILY,
           "HOURLY": du.HOURLY, "MINUTELY": du.MINUTELY, "SECONDLY": du.SECONDLY}
WD = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
DU_WD = [du.MO, du.TU, du.WE, du.TH, du.FR, du.SA, du.SU]

# dateutil stops walking after datetime.MAXYEAR; a rule whose periods are all
# empty walks there. Give its module a copy of datetime with a nearer limit.
_dt_proxy = types.ModuleType("datetime")
_dt_proxy.__dict__.update(dt.__dict__)
du.datetime = _dt_proxy


def fmt_utc(t):
    return t.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def fmt_wall(w):
    return w.strftime("%Y%m%dT%H%M%S")


def to_instant(wall, zone):
    """wall: naive datetime; zone: None (floating or UTC) or a zone name."""
    if zone is None:
        return wall.replace(tzinfo=UTC)
    return wall.replace(tzinfo=ZoneInfo(zone), fold=0).astimezone(UTC)


class Case:
    def __init__(self, family):
        self.family = family
        self.kind = "utc"        # "utc" (Z), "float", "tz", "none" (no DTSTART)
        self.zone = None         # zone name when kind == "tz"
        self.start = None        # naive wall clock
        self.start_date = False  # DTSTART;VALUE=DATE
        self.parts = []          # [(NAME, text value)]
        self.du = {}             # dateutil keyword arguments
        self.until = None        # instant (aware) or None
        self.exdates = []        # [(text line, instant)]
        self.rdates = []
        self.frm = None          # aware UTC
        self.horizon_years = 40
        self.refuse = None

    def rule_zone(self):
        return self.zone if self.kind == "tz" else None

    def text(self):
        lines = []
        if self.kind != "none":
            if self.start_date:
                p = ";TZID=" + self.zone if self.kind == "tz" else ""
                lines.append("DTSTART%s;VALUE=DATE:%s" % (p, self.start.strftime("%Y%m%d")))
            elif self.kind == "tz":
                lines.append("DTSTART;TZID=%s:%s" % (self.zone, fmt_wall(self.start)))
            elif self.kind == "utc":
                lines.append("DTSTART:%sZ" % fmt_wall(self.start))
            else:
                lines.append("DTSTART:%s" % fmt_wall(self.start))
        lines.append("RRULE:" + ";".join("%s=%s" % p for p in self.parts))
        lines += [l for l, _ in self.exdates]
        lines += [l for l, _ in self.rdates]
        return "\n".join(lines)


def date_value(c, name, wall, style, rng):
    """An EXDATE or RDATE line for wall (naive, in the rule's zone) and its instant."""
    z = c.rule_zone()
    if style == "date":
        w = dt.datetime(wall.year, wall.month, wall.day)
        return "%s;VALUE=DATE:%s" % (name, w.strftime("%Y%m%d")), to_instant(w, z)
    inst = to_instant(wall, z)
    if style == "utc" or (style == "local" and c.kind == "utc"):
        return "%s:%s" % (name, fmt_utc(inst)), inst
    if style == "tz" and z is not None:
        return "%s;TZID=%s:%s" % (name, z, fmt_wall(wall)), inst
    if style == "otherzone":
        oz = rng.choice(ZONES)
        ow = inst.astimezone(ZoneInfo(oz)).replace(tzinfo=None)
        return "%s;TZID=%s:%s" % (name, oz, fmt_wall(ow)), to_instant(ow, oz)
    # floating: read in the rule's zone
    return "%s:%s" % (name, fmt_wall(wall)), inst


def occurrences(c):
    """The expected occurrences strictly after c.frm, or None when dateutil
    itself cannot evaluate the rule."""
    z = c.rule_zone()
    start = c.start if c.kind != "none" else dt.datetime(2000, 1, 1)
    cap = c.frm.year + c.horizon_years
    _dt_proxy.MAXYEAR = cap
    horizon = dt.datetime(cap, 1, 1, tzinfo=UTC)
    try:
        rule = du.rrule(dtstart=start, cache=False, **c.du)
    except ValueError:
        rule = []  # dateutil: "byxxx generates an empty set"; the RRULE adds nothing
    excluded = {e for _, e in c.exdates}
    found = []
    margin = dt.timedelta(hours=60)
    for w in rule:
        if c.until is not None and w.replace(tzinfo=UTC) > c.until + margin:
            break  # wall clocks this far past UNTIL map to instants after it
        inst = to_instant(w, z)
        if c.until is not None and inst > c.until:
            continue
        if inst > c.frm and inst < horizon and inst not in excluded:
            found.append(inst)
        if len(found) >= MAX_OCC:
            found = sorted(set(found))[:MAX_OCC]
            if w.replace(tzinfo=UTC) > found[-1] + margin:
                break
    for _, r in c.rdates:
        if r > c.frm and r < horizon and r not in excluded:
            found.append(r)
    return sorted(set(found))[:MAX_OCC], horizon


# ---------------------------------------------------------------- rules

def pick_ints(rng, lo, hi, most, signed=False):
    out = []
    for _ in range(1 + rng.randrange(most)):
        v = rng.randint(lo, hi)
        if signed and rng.randrange(3) == 0:
            v = -v
        if v not in out:
            out.append(v)
    return out


def add(c, name, text, key=None, value=None):
    c.parts.append((name, text))
    if key:
        c.du[key] = value


def ints_text(xs):
    return ",".join(str(x) for x in xs)


def random_rule(c, rng, freq):
    """Random parts for freq, chosen so that dateutil stays fast: sub-daily
    rules only get filters their INTERVAL grid reaches quickly."""
    add(c, "FREQ", freq, "freq", DU_FREQ[freq])
    sub = freq in ("HOURLY", "MINUTELY", "SECONDLY")
    if rng.randrange(2) == 0:
        iv = {"YEARLY": [2, 3, 4], "MONTHLY": [2, 3, 5, 7, 12], "WEEKLY": [2, 3, 5],
              "DAILY": [2, 3, 7, 10, 45], "HOURLY": [2, 3, 4, 5, 6, 7, 12, 25],
              "MINUTELY": [2, 5, 7, 15, 30, 45, 90, 100, 1439],
              "SECONDLY": [2, 7, 15, 30, 45, 90, 3600, 7200, 86401]}[freq]
        add(c, "INTERVAL", str(rng.choice(iv)), "interval", None)
        c.du["interval"] = int(c.parts[-1][1])
    interval = c.du.get("interval", 1)
    day_filter = False
    if rng.randrange(4) == 0:
        v = pick_ints(rng, 1, 12, 4)
        add(c, "BYMONTH", ints_text(v), "bymonth", v)
        day_filter = True
    if freq != "WEEKLY" and rng.randrange(4) == 0:
        v = pick_ints(rng, 1, 28 if sub else 31, 3, signed=True)
        add(c, "BYMONTHDAY", ints_text(v), "bymonthday", v)
        day_filter = True
    if (freq == "YEARLY" or sub) and "bymonth" not in c.du and rng.randrange(6) == 0:
        v = pick_ints(rng, 1, 365, 4, signed=True)
        add(c, "BYYEARDAY", ints_text(v), "byyearday", v)
        day_filter = True
    if freq == "YEARLY" and rng.randrange(5) == 0:
        v = pick_ints(rng, 1, 53, 3, signed=True)
        add(c, "BYWEEKNO", ints_text(v), "byweekno", v)
        day_filter = True
    if freq == "YEARLY" and rng.randrange(12) == 0 and not day_filter:
        v = pick_ints(rng, -60, 60, 2)
        add(c, "BYEASTER", ints_text(v), "byeaster", v)
    if rng.randrange(3) == 0:
        days, dus = [], []
        for _ in range(1 + rng.randrange(3)):
            d = rng.randrange(7)
            n = 0
            if freq in ("MONTHLY", "YEARLY") and "byweekno" not in c.du and rng.randrange(2) == 0:
                n = rng.randint(1, 4) if "bymonth" in c.du or freq == "MONTHLY" else rng.randint(1, 30)
                if rng.randrange(3) == 0:
                    n = -n
            t = ("%d" % n if n else "") + WD[d]
            if t not in days:
                days.append(t)
                dus.append(DU_WD[d](n) if n else DU_WD[d])
        add(c, "BYDAY", ",".join(days), "byweekday", dus)
        day_filter = True
    # Times of day. For sub-daily rules only values the grid reaches every day.
    if not sub:
        if rng.randrange(3) == 0:
            v = pick_ints(rng, 0, 23, 3)
            add(c, "BYHOUR", ints_text(v), "byhour", v)
        if rng.randrange(3) == 0:
            v = pick_ints(rng, 0, 59, 3)
            add(c, "BYMINUTE", ints_text(v), "byminute", v)
        if rng.randrange(4) == 0:
            v = pick_ints(rng, 0, 59, 2)
            add(c, "BYSECOND", ints_text(v), "bysecond", v)
    else:
        if freq == "HOURLY":
            if 24 % interval == 0 and rng.randrange(3) == 0:
                v = sorted({(c.start.hour + interval * k) % 24 for k in pick_ints(rng, 0, 24 // interval - 1, 3)})
                add(c, "BYHOUR", ints_text(v), "byhour", v)
            if rng.randrange(3) == 0:
                v = pick_ints(rng, 0, 59, 3)
                add(c, "BYMINUTE", ints_text(v), "byminute", v)
            if rng.randrange(4) == 0:
                v = pick_ints(rng, 0, 59, 2)
                add(c, "BYSECOND", ints_text(v), "bysecond", v)
        elif freq == "MINUTELY":
            if interval <= 30 and rng.randrange(3) == 0:
                v = pick_ints(rng, 0, 23, 6)
                add(c, "BYHOUR", ints_text(v), "byhour", v)
            if 60 % interval == 0 and rng.randrange(3) == 0:
                v = sorted({(c.start.minute + interval * k) % 60 for k in pick_ints(rng, 0, 60 // interval - 1, 3)})
                add(c, "BYMINUTE", ints_text(v), "byminute", v)
            if rng.randrange(4) == 0:
                v = pick_ints(rng, 0, 59, 2)
                add(c, "BYSECOND", ints_text(v), "bysecond", v)
        else:
            if interval <= 90 and rng.randrange(3) == 0:
                v = pick_ints(rng, 0, 23, 8)
                add(c, "BYHOUR", ints_text(v), "byhour", v)
            if interval <= 7 and rng.randrange(3) == 0:
                v = pick_ints(rng, 0, 59, 20)
                add(c, "BYMINUTE", ints_text(v), "byminute", v)
            if 60 % interval == 0 and rng.randrange(3) == 0:
                v = sorted({(c.start.second + interval * k) % 60 for k in pick_ints(rng, 0, 60 // interval - 1, 3)})
                add(c, "BYSECOND", ints_text(v), "bysecond", v)
    # RFC 5545: BYSETPOS only with another BYxxx part.
    if freq not in ("HOURLY", "MINUTELY", "SECONDLY") and any(k.startswith("BY") for k, _ in c.parts) and rng.randrange(4) == 0:
        v = pick_ints(rng, 1, 5, 2, signed=True)
        add(c, "BYSETPOS", ints_text(v), "bysetpos", v)
    if rng.randrange(5) == 0:
        w = rng.randrange(7)
        add(c, "WKST", WD[w], "wkst", w)
    return day_filter


def start_age(freq):
    return {"YEARLY": 40 * 365, "MONTHLY": 20 * 365, "WEEKLY": 10 * 365, "DAILY": 3 * 365,
            "HOURLY": 60, "MINUTELY": 2, "SECONDLY": 0.1}[freq]


def transitions(zone, lo=2008, hi=2030):
    """The zone's UTC offset changes between lo and hi: (instant, before, after)."""
    z = ZoneInfo(zone)
    out = []
    t = dt.datetime(lo, 1, 1, tzinfo=UTC)
    end = dt.datetime(hi, 1, 1, tzinfo=UTC)
    step = dt.timedelta(days=1)
    prev = t.astimezone(z).utcoffset()
    while t < end:
        n = t + step
        off = n.astimezone(z).utcoffset()
        if off != prev:
            a, b = t, n
            while b - a > dt.timedelta(minutes=1):
                m = a + (b - a) / 2
                if m.astimezone(z).utcoffset() == prev:
                    a = m
                else:
                    b = m
            out.append((b.replace(second=0, microsecond=0), prev, off))
            prev = off
        t = n
    return out


def choose_start(c, rng, freq, zone_trans):
    """A DTSTART wall clock: near a transition of the zone half the time."""
    if c.kind == "tz" and zone_trans and rng.randrange(2) == 0:
        inst, before, after = rng.choice(zone_trans)
        wall = (inst + before).replace(tzinfo=None)  # wall clock at the transition, old offset
        wall += dt.timedelta(minutes=rng.choice([-90, -60, -30, -1, 0, 1, 15, 30, 45, 59, 60, 90, 24 * 60]))
        return wall.replace(second=rng.choice([0, 0, 0, 17]))
    base = dt.datetime(2015, 1, 1) + dt.timedelta(seconds=rng.randrange(15 * 365 * 86400))
    return base.replace(second=rng.choice([0, 0, 0, base.second]))


def random_case(rng, trans, family="random"):
    c = Case(family)
    freq = rng.choice(FREQS)
    r = rng.randrange(12)
    c.kind = "utc" if r < 4 else "float" if r < 6 else "none" if r < 7 and freq in ("YEARLY", "MONTHLY", "WEEKLY", "DAILY") else "tz"
    if c.kind == "tz":
        c.zone = rng.choice(ZONES)
    c.start = choose_start(c, rng, freq, trans.get(c.zone))
    if c.kind == "none":
        c.start = dt.datetime(2000, 1, 1)
    random_rule(c, rng, freq)
    age = start_age(freq)
    z = c.rule_zone()
    s_inst = to_instant(c.start, z)
    if c.kind == "none":
        c.frm = dt.datetime(2000 + rng.randrange(30), 1 + rng.randrange(12), 1, tzinfo=UTC)
        if freq == "DAILY":
            c.frm = dt.datetime(2000, 1, 1 + rng.randrange(28), tzinfo=UTC)
    else:
        k = rng.randrange(4)
        if k == 0:
            c.frm = s_inst - dt.timedelta(hours=rng.choice([1, 5, 30]))
        else:
            c.frm = s_inst + dt.timedelta(days=rng.random() * age)
        c.frm = c.frm.replace(microsecond=0)
    if rng.randrange(8) == 0:
        n = rng.randint(1, 60)
        add(c, "COUNT", str(n), "count", n)
    elif rng.randrange(8) == 0 and c.kind != "none":
        u = s_inst + dt.timedelta(days=rng.random() * age * 2)
        u = u.replace(microsecond=0)
        if c.kind == "float":
            add(c, "UNTIL", fmt_wall(u.replace(tzinfo=None)))
        else:
            add(c, "UNTIL", fmt_utc(u))
        c.until = u
    return c


def add_dates(c, rng, base):
    """EXDATEs on real occurrences and RDATEs near from."""
    if base and rng.randrange(4) == 0:
        for inst in rng.sample(base, min(len(base), 1 + rng.randrange(3))):
            wall = inst.astimezone(ZoneInfo(c.zone) if c.kind == "tz" else UTC).replace(tzinfo=None)
            style = rng.choice(["local", "utc", "tz", "otherzone"])
            line, i = date_value(c, "EXDATE", wall, style, rng)
            if i == inst:
                c.exdates.append((line, i))
    if rng.randrange(4) == 0:
        for _ in range(1 + rng.randrange(3)):
            i = c.frm + dt.timedelta(seconds=rng.randrange(1, 40 * 86400))
            wall = i.astimezone(ZoneInfo(c.zone) if c.kind == "tz" else UTC).replace(tzinfo=None, microsecond=0)
            line, ri = date_value(c, "RDATE", wall, rng.choice(["local", "utc", "tz", "otherzone", "date"]), rng)
            c.rdates.append((line, ri))


# ------------------------------------------------------------ families

def dst_cases(rng, trans):
    """Rules on both sides of every zone's gaps and overlaps."""
    out = []
    for zone in ZONES:
        ts = trans.get(zone, [])
        picks = ts[:2] + ts[len(ts) // 2:len(ts) // 2 + 2] + ts[-2:]
        for inst, before, after in picks:
            wall_old = (inst + before).replace(tzinfo=None)  # transition, wall clock in the old offset
            wall_new = (inst + after).replace(tzinfo=None)
            lo, hi = min(wall_old, wall_new), max(wall_old, wall_new)
            mid = lo + (hi - lo) / 2
            for wall, rule in [
                (mid, "FREQ=DAILY"), (lo, "FREQ=DAILY"), (hi - dt.timedelta(minutes=1), "FREQ=DAILY"),
                (lo - dt.timedelta(hours=2), "FREQ=HOURLY"),
                (lo - dt.timedelta(hours=1), "FREQ=MINUTELY;INTERVAL=15"),
                (lo - dt.timedelta(hours=1), "FREQ=MINUTELY;INTERVAL=30;BYSECOND=0,30"),
                (mid - dt.timedelta(days=14), "FREQ=WEEKLY"),
                (mid.replace(day=1), "FREQ=DAILY;BYHOUR=%d;BYMINUTE=%d" % (mid.hour, mid.minute)),
                (mid, "FREQ=MONTHLY;BYMONTHDAY=%d" % mid.day),
                (mid - dt.timedelta(days=400), "FREQ=YEARLY;BYMONTH=%d;BYMONTHDAY=%d;BYHOUR=%d;BYMINUTE=%d" % (mid.month, mid.day, mid.hour, mid.minute)),
                (lo - dt.timedelta(hours=3), "FREQ=HOURLY;INTERVAL=5;BYMINUTE=0,%d" % mid.minute),
            ]:
                c = Case("dst")
                c.kind, c.zone = "tz", zone
                c.start = wall.replace(microsecond=0)
                for p in rule.split(";"):
                    k, v = p.split("=")
                    c.parts.append((k, v))
                set_du(c)
                c.frm = (inst - dt.timedelta(hours=rng.choice([3, 12, 30]))).replace(microsecond=0)
                if c.frm < to_instant(c.start, zone) - dt.timedelta(days=1):
                    c.frm = to_instant(c.start, zone) - dt.timedelta(hours=1)
                c.horizon_years = 20
                out.append(c)
    return out


def set_du(c):
    """dateutil arguments from c.parts (used by the hand-written families)."""
    for k, v in c.parts:
        if k == "FREQ":
            c.du["freq"] = DU_FREQ[v]
        elif k == "INTERVAL":
            c.du["interval"] = int(v)
        elif k == "COUNT":
            c.du["count"] = int(v)
        elif k == "WKST":
            c.du["wkst"] = WD.index(v)
        elif k == "BYDAY":
            ds = []
            for d in v.split(","):
                n = int(d[:-2]) if d[:-2] else 0
                ds.append(DU_WD[WD.index(d[-2:])](n) if n else DU_WD[WD.index(d[-2:])])
            c.du["byweekday"] = ds
        elif k.startswith("BY"):
            c.du[k.lower()] = [int(x) for x in v.split(",")]


def hand(family, text_start, rule, frm, kind="utc", zone=None, start_date=False, dates=(), horizon=40, refuse=None):
    c = Case(family)
    c.kind, c.zone, c.start, c.start_date = kind, zone, text_start, start_date
    for p in rule.split(";"):
        k, v = p.split("=")
        c.parts.append((k, v))
    set_du(c)
    c.frm = frm
    c.horizon_years = horizon
    c.refuse = refuse
    for name, wall, style in dates:
        line, inst = date_value(c, name, wall, style, random.Random(0))
        (c.exdates if name == "EXDATE" else c.rdates).append((line, inst))
    return c


def special_cases():
    D = dt.datetime
    U = lambda *a: dt.datetime(*a, tzinfo=UTC)
    out = []
    # Pacific/Apia skipped Friday 30 December 2011 (UTC-10 -> UTC+14).
    for rule in ["FREQ=DAILY", "FREQ=HOURLY;INTERVAL=5", "FREQ=DAILY;BYHOUR=0,12,23", "FREQ=WEEKLY;BYDAY=FR,SA",
                 "FREQ=MONTHLY;BYMONTHDAY=30", "FREQ=MINUTELY;INTERVAL=90"]:
        for start in [D(2011, 12, 28, 12), D(2011, 12, 30, 12), D(2011, 12, 29, 23, 30)]:
            out.append(hand("apia", start, rule, U(2011, 12, 27), "tz", "Pacific/Apia", horizon=5))
    # The recurrence set is RRULE + RDATE - EXDATE: an empty RRULE with RDATEs.
    for rule in ["FREQ=HOURLY;BYMINUTE=0;BYSETPOS=2", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
                 "FREQ=DAILY;INTERVAL=7;BYDAY=TU", "FREQ=MINUTELY;INTERVAL=60;BYSECOND=36;BYSETPOS=3",
                 "FREQ=DAILY;COUNT=2", "FREQ=HOURLY;INTERVAL=2;BYHOUR=1"]:
        for kind, zone in [("utc", None), ("tz", "Europe/Berlin"), ("float", None)]:
            dates = [("RDATE", D(2024, 1, 5, 12), "local"), ("RDATE", D(2024, 3, 31, 2, 30), "local"),
                     ("RDATE", D(2024, 2, 1), "date")]
            if rule.endswith("COUNT=2"):
                dates += [("EXDATE", D(2024, 1, 1), "local"), ("EXDATE", D(2024, 1, 2), "local")]
            out.append(hand("set", D(2024, 1, 1), rule, U(2023, 12, 31), kind, zone, dates=dates, horizon=2))
    # All-day values (VALUE=DATE): midnight in the rule's zone.
    for kind, zone in [("utc", None), ("float", None), ("tz", "America/Sao_Paulo"), ("tz", "Asia/Tehran"),
                       ("tz", "Pacific/Chatham"), ("tz", "Australia/Lord_Howe"), ("tz", "America/Santiago")]:
        for rule in ["FREQ=DAILY", "FREQ=WEEKLY;BYDAY=MO,TH", "FREQ=MONTHLY;BYMONTHDAY=1,-1",
                     "FREQ=YEARLY;BYMONTH=3,10", "FREQ=DAILY;INTERVAL=3;COUNT=15"]:
            for start in [D(2018, 10, 1), D(2019, 3, 15), D(2022, 9, 20)]:
                dates = [("EXDATE", start + dt.timedelta(days=3), "date"), ("EXDATE", start + dt.timedelta(days=7), "date"),
                         ("RDATE", start + dt.timedelta(days=10, hours=15), "date"),
                         ("EXDATE", start + dt.timedelta(days=14), "local")]
                out.append(hand("date", start, rule, U(start.year, start.month, start.day) - dt.timedelta(days=1),
                                kind, zone, start_date=True, dates=dates, horizon=5))
    # Sub-daily rules with day filters and an INTERVAL that does not divide a day.
    for rule in ["FREQ=SECONDLY;INTERVAL=7;BYDAY=MO", "FREQ=SECONDLY;INTERVAL=7;BYDAY=MO;BYHOUR=9;BYMINUTE=0,1,2",
                 "FREQ=SECONDLY;INTERVAL=86401;BYMONTH=1,7", "FREQ=SECONDLY;INTERVAL=3601;BYMONTHDAY=1,15,-1",
                 "FREQ=SECONDLY;INTERVAL=13;BYYEARDAY=1,100,-1;BYHOUR=12", "FREQ=MINUTELY;INTERVAL=7;BYDAY=SA,SU",
                 "FREQ=MINUTELY;INTERVAL=1439;BYMONTH=3,11;BYDAY=SU", "FREQ=HOURLY;INTERVAL=5;BYMONTHDAY=13;BYDAY=FR",
                 "FREQ=HOURLY;INTERVAL=7;BYMONTH=2;BYMONTHDAY=29", "FREQ=SECONDLY;INTERVAL=97;BYMONTH=2;BYMINUTE=30",
                 "FREQ=SECONDLY;BYSETPOS=1;BYSECOND=5,10", "FREQ=SECONDLY;BYSETPOS=-1;BYHOUR=3;BYMINUTE=4;BYSECOND=5",
                 "FREQ=SECONDLY;INTERVAL=5;BYSETPOS=1,-1;BYMINUTE=0;BYSECOND=0,5"]:
        for kind, zone, start in [("utc", None, D(2024, 1, 1, 0, 0, 1)), ("tz", "America/New_York", D(2024, 3, 1, 8, 30)),
                                  ("tz", "Australia/Lord_Howe", D(2024, 9, 30, 1, 59, 59))]:
            out.append(hand("subdaily", start, rule, to_instant(start, zone) + dt.timedelta(days=3), kind, zone, horizon=12))
    # Negative BYxxx, BYWEEKNO with WKST, BYSETPOS, COUNT and UNTIL on their own.
    for rule in ["FREQ=YEARLY;BYWEEKNO=1,-1;BYDAY=MO;WKST=SU", "FREQ=YEARLY;BYWEEKNO=53;BYDAY=SU,MO;WKST=TU",
                 "FREQ=YEARLY;BYWEEKNO=-53,-2;WKST=SA", "FREQ=YEARLY;BYWEEKNO=20", "FREQ=YEARLY;BYYEARDAY=-1,-366,60",
                 "FREQ=MONTHLY;BYMONTHDAY=-1,-2,-31", "FREQ=MONTHLY;BYDAY=-1FR,-5MO", "FREQ=YEARLY;BYDAY=-1SU,20MO,-53TH",
                 "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-2,1,3", "FREQ=YEARLY;BYMONTH=1,6;BYDAY=SA,SU;BYSETPOS=-1,1",
                 "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=8,17;BYSETPOS=2,-1", "FREQ=DAILY;BYHOUR=9,12,15;BYMINUTE=0,30;BYSETPOS=-1,2",
                 "FREQ=YEARLY;BYEASTER=0,-2,1", "FREQ=YEARLY;BYEASTER=49;BYHOUR=10", "FREQ=WEEKLY;INTERVAL=2;WKST=SU;BYDAY=TU,SU",
                 "FREQ=WEEKLY;INTERVAL=2;WKST=MO;BYDAY=TU,SU", "FREQ=MONTHLY;BYMONTHDAY=31;COUNT=10",
                 "FREQ=DAILY;UNTIL=20240315T120000Z", "FREQ=HOURLY;INTERVAL=7;COUNT=50", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO"]:
        for kind, zone in [("utc", None), ("tz", "Europe/Dublin"), ("tz", "Asia/Kathmandu"), ("tz", "America/St_Johns")]:
            start = D(2019, 12, 30, 9, 15)
            out.append(hand("parts", start, rule, U(2020, 1, 1), kind, zone, horizon=60))
    # Deliberate limits: the engine refuses these, with the reason.
    for rule, why in [("FREQ=DAILY;COUNT=100001", "COUNT=100001 is too large"),
                      ("FREQ=YEARLY;INTERVAL=101", "INTERVAL=101 is too large for FREQ=YEARLY"),
                      ("FREQ=MONTHLY;INTERVAL=1201", "INTERVAL=1201 is too large"),
                      ("FREQ=WEEKLY;INTERVAL=5201", "INTERVAL=5201 is too large"),
                      ("FREQ=DAILY;INTERVAL=36501", "INTERVAL=36501 is too large"),
                      ("FREQ=HOURLY;INTERVAL=876001", "INTERVAL=876001 is too large"),
                      ("FREQ=MINUTELY;INTERVAL=1000001", "INTERVAL=1000001 is too large"),
                      ("FREQ=SECONDLY;INTERVAL=1000001", "INTERVAL=1000001 is too large"),
                      ("FREQ=HOURLY;BYMINUTE=0,30;BYSECOND=0,30;BYSETPOS=1,4", "whole BYMINUTE x BYSECOND combinations"),
                      ("FREQ=DAILY;BYHOUR=0,1;BYMINUTE=%s;BYSECOND=%s" % (ints_text(range(60)), ints_text(range(60))), "7200 times per day"),
                      ("FREQ=SECONDLY;INTERVAL=86399;BYHOUR=0;BYMINUTE=0;BYSECOND=0", "no occurrence within"),
                      ]:
        out.append(hand("limit", D(2024, 1, 1, 12), rule, U(2024, 1, 1), refuse=why))
    out.append(hand("limit", D(1899, 12, 31), "FREQ=DAILY", U(1900, 1, 1), refuse="year 1899 is out of range"))
    # COUNT over centuries and on filtered sub-daily grids: the engine counts
    # them per day and per 400-year cycle, never by walking every occurrence.
    secs58 = ints_text(range(59))
    for start, rule, frm, kind, zone in [
        (D(1900, 1, 1), "FREQ=SECONDLY;INTERVAL=7;BYHOUR=23;BYMINUTE=59;BYSECOND=59;COUNT=100000", U(2026, 11, 20), "utc", None),
        (D(1920, 1, 1), "FREQ=HOURLY;COUNT=5000;BYMONTH=2;BYMONTHDAY=29", U(2026, 11, 26), "utc", None),
        (D(1920, 1, 1), "FREQ=HOURLY;COUNT=5000;BYMONTH=2;BYMONTHDAY=29", U(2776, 2, 29, 4), "utc", None),
        (D(2026, 11, 26), "FREQ=SECONDLY;COUNT=100000;BYSECOND=" + secs58, U(2026, 11, 27, 4, 14, 30), "utc", None),
        (D(1900, 1, 1), "FREQ=DAILY;COUNT=100000", U(2173, 10, 10), "utc", None),
        (D(1900, 1, 1, 9), "FREQ=DAILY;COUNT=60000;BYDAY=MO,TH;BYHOUR=9,17;BYSETPOS=1,-1", U(2026, 11, 26), "utc", None),
        (D(1950, 1, 2, 9), "FREQ=MINUTELY;INTERVAL=15;BYHOUR=9;BYDAY=MO;COUNT=100000", U(2026, 11, 26), "utc", None),
        (D(1950, 1, 2, 9), "FREQ=MINUTELY;INTERVAL=15;BYHOUR=9;BYDAY=MO;COUNT=100000", U(2429, 2, 1), "utc", None),
        (D(1900, 1, 1), "FREQ=HOURLY;INTERVAL=5;BYMONTHDAY=13;BYDAY=FR;COUNT=2000", U(2026, 11, 26), "utc", None),
        (D(1950, 1, 1, 9), "FREQ=HOURLY;BYHOUR=9,17;COUNT=100000", U(2026, 11, 26), "tz", "America/New_York"),
        (D(1950, 1, 1, 9), "FREQ=HOURLY;BYHOUR=9,17;COUNT=100000", U(2086, 11, 15), "tz", "America/New_York"),
        (D(1900, 1, 1), "FREQ=YEARLY;COUNT=5000", U(2026, 11, 26), "utc", None),
    ]:
        out.append(hand("count", start, rule, frm, kind, zone, horizon=40))
    for rule in ["FREQ=MONTHLY;COUNT=100000;BYMONTHDAY=1,2,3,4,5,6,7,8,9,10",
                 "FREQ=DAILY;INTERVAL=11;COUNT=100000;BYMONTH=2;BYMONTHDAY=29"]:
        out.append(hand("count", D(1900, 1, 1), rule, U(2026, 11, 26), refuse="use UNTIL instead of COUNT"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="fail when the file would change")
    ap.add_argument("-n", type=int, default=1500, help="random schedules (default 1500)")
    ap.add_argument("--out", default=OUT, help="output file (default schedule/testdata/golden.jsonl)")
    args = ap.parse_args()
    rng = random.Random(SEED)
    trans = {z: transitions(z) for z in ZONES}
    cases = []
    for _ in range(args.n):
        c = random_case(rng, trans)
        base = None
        if rng.randrange(2) == 0:
            base, _ = occurrences(c)
        add_dates(c, rng, base)
        cases.append(c)
    cases += dst_cases(rng, trans)
    cases += special_cases()
    lines = []
    for i, c in enumerate(cases):
        t0 = time.time()
        rec = {"id": i, "family": c.family, "text": c.text(), "from": fmt_utc(c.frm)}
        if c.refuse:
            rec["refuse"] = c.refuse
        else:
            want, horizon = occurrences(c)
            rec["horizon"] = fmt_utc(horizon)
            rec["want"] = [fmt_utc(t) for t in want]
        lines.append(json.dumps(rec, separators=(",", ":")))
        if os.environ.get("GOLDEN_TIMING") and time.time() - t0 > 0.3:  # to find slow cases
            print("slow %.1fs %s %r" % (time.time() - t0, c.family, c.text()), file=sys.stderr)
    data = "\n".join(lines) + "\n"
    path = os.path.normpath(args.out)
    if args.check:
        with open(path) as f:
            if f.read() != data:
                sys.exit("%s is out of date; run scripts/gen-rrule-golden.py" % path)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(data)
    print("wrote %d schedules to %s (%d bytes)" % (len(cases), path, len(data)))


if __name__ == "__main__":
    main()
