// A panel's description as physai.interface.panel writes it (PanelSpec.to_json): each control's value from its
// input and back, its text beside the slider and in the page's address, and the panel's words.
//
// format(template, values) is Python's template.format(**values) for the format specs physai.interface.panel
// allows (FORMAT_SPEC: '', 'g', '.Nf', '.Ng', '.Ne'), rounded as Python rounds: to the nearest, ties to even, on the
// number's exact decimal value (tests/test_web.py compares it with Python on many values). No DOM, no MuJoCo.

// ---------------------------------------------------------------------------------------------------------------
// Numbers as Python's format() writes them

// The decimal digits of |x| (a double is a finite binary fraction, so its expansion ends): [int, frac]. Exact for a
// whole number, and to 100 decimals otherwise, which decides every tie of the formats here for |x| >= 1e-60 (below,
// where no panel writes a number, JavaScript's own rounding, whose ties go up, stands in).
function exactDigits(x) {
  const a = Math.abs(x);
  if (a >= 1e21) return [BigInt(a).toString(), ''];
  if (a !== 0 && a < 1e-60) {
    const [mantissa, exp] = a.toExponential(30).split('e');
    return ['0', '0'.repeat(-Number(exp) - 1) + mantissa.replace('.', '').replace(/0+$/, '')];
  }
  const [int, frac] = a.toFixed(100).split('.');
  return [int, frac.replace(/0+$/, '')];
}

// digits (a string of decimal digits with the point after `point` of them) rounded at `keep` digits, ties to even:
// [digits, point], where a carry may lengthen the integer part.
function roundDigits(digits, point, keep) {
  if (keep >= digits.length) return [digits.padEnd(keep, '0'), point];
  if (keep < 0) return ['0'.repeat(Math.max(point, 0) || 1), Math.max(point, 1)];
  const head = digits.slice(0, keep), first = digits[keep], rest = digits.slice(keep + 1);
  const last = keep > 0 ? Number(head[keep - 1]) : 0;
  const up = first > '5' || (first === '5' && (/[1-9]/.test(rest) || last % 2 === 1));
  if (!up) return [head, point];
  const out = head.split('');
  let i = out.length - 1;
  while (i >= 0 && out[i] === '9') { out[i] = '0'; i -= 1; }
  if (i >= 0) { out[i] = String(Number(out[i]) + 1); return [out.join(''), point]; }
  return ['1' + out.join(''), point + 1];
}

function fixed(x, decimals) {
  const [int, frac] = exactDigits(x);
  const [digits, point] = roundDigits(int + frac, int.length, int.length + decimals);
  const i = digits.slice(0, point).replace(/^0+(?=\d)/, '') || '0', f = digits.slice(point);
  return (x < 0 || Object.is(x, -0) ? '-' : '') + (decimals > 0 ? `${i}.${f}` : i);
}

// [significant digits (n of them), decimal exponent of the first] of |x|, rounded to n digits.
function significant(x, n) {
  if (x === 0) return ['0'.repeat(n), 0];
  const [int, frac] = exactDigits(x);
  const all = int + frac, lead = all.search(/[1-9]/);
  const [digits, point] = roundDigits(all.slice(lead), int.length - lead, n);
  return [digits.slice(0, n), point - 1];
}

function scientific(x, decimals) {
  const [digits, exp] = significant(x, decimals + 1);
  const mantissa = decimals > 0 ? `${digits[0]}.${digits.slice(1)}` : digits[0];
  return `${x < 0 || Object.is(x, -0) ? '-' : ''}${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
}

function general(x, precision) {
  const p = Math.max(precision, 1);
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const [, exp] = significant(x, p);
  const strip = (s) => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s);
  if (exp >= -4 && exp < p) return strip(fixed(x, p - 1 - exp));
  const [mantissa, e] = scientific(x, p - 1).split('e');
  return `${strip(mantissa)}e${e}`;
}

// format(x, spec) of Python for a number (spec '', 'g', '.Nf', '.Ng' or '.Ne'; '' only for whole numbers) or a string.
export function formatValue(x, spec = '') {
  if (typeof x === 'string') return x;
  if (typeof x === 'boolean') return x ? 'True' : 'False';
  if (x === null || x === undefined) return 'None';
  const m = /^(?:\.(\d+))?([fge])?$/.exec(spec);
  if (!m) throw new Error(`format: unsupported spec ${spec}`);
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const precision = m[1] === undefined ? 6 : Number(m[1]);
  if (!m[2]) {
    if (m[1] !== undefined || !Number.isInteger(x)) throw new Error(`format: a number without a type needs a whole number, got ${x}`);
    return String(x);
  }
  if (m[2] === 'f') return fixed(x, precision);
  if (m[2] === 'e') return scientific(x, precision);
  return general(x, precision);
}

// template.format(**values) of Python for templates whose fields are {name} or {name:spec}.
export function format(template, values) {
  return template.replace(/\{(\w+)(?::([^}]*))?\}/g, (_, name, spec) => {
    if (!(name in values)) throw new Error(`format: no value for {${name}} in "${template}"`);
    return formatValue(values[name], spec || '');
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Controls

// One control of the description: its input's position for a value (SI units) and back, its text, its address text.
export class Control {
  constructor(json, logPositions = 1000) {
    Object.assign(this, json);
    this.positions = logPositions;
    this.scale = json.scale ?? 1;
  }

  get defaultValue() {
    return this.kind === 'choice' ? this.default : this.default * this.scale;
  }

  // the input's attributes (a range input; a choice is a select)
  inputAttributes() {
    if (this.kind === 'log') return {type: 'range', min: 0, max: this.positions, step: 1};
    return {type: 'range', min: this.min, max: this.max, step: this.step};
  }

  // the value (SI) at an input's position (a string, as inputs hold it)
  value(position) {
    if (this.kind === 'choice') return this.options.find((o) => String(o) === String(position)) ?? this.default;
    if (this.kind === 'log') {
      const shown = this.min * (this.max / this.min) ** (Number(position) / this.positions);
      return this.clamp(Number(formatValue(shown, this.format)) * this.scale);   // as the readout shows it
    }
    return this.clamp(Number(position) * this.scale);
  }

  // the input's position showing a value (SI)
  position(value) {
    if (this.kind === 'choice') return String(value);
    const shown = value / this.scale;
    if (this.kind === 'log') return String(Math.round(Math.log(shown / this.min) / Math.log(this.max / this.min) * this.positions));
    return String(shown);
  }

  clamp(value) {
    if (this.kind === 'choice') return this.options.includes(value) ? value : this.default;
    if (Number.isNaN(value)) return this.defaultValue;
    return Math.min(Math.max(value, this.min * this.scale), this.max * this.scale);
  }

  // the text beside the slider: the displayed value in the control's format, with its unit
  show(value) {
    if (this.kind === 'choice') return this.labels[this.options.indexOf(value)] ?? String(value);
    return `${formatValue(value / this.scale, this.format)}${this.unit ? ` ${this.unit}` : ''}`;
  }

  // the value in the page's address: the displayed value to 12 significant digits (or the option)
  urlText(value) {
    return this.kind === 'choice' ? String(value) : String(Number((value / this.scale).toPrecision(12)));
  }

  // What an address text gives: {value, problem}. A text the control can take gives its value (within 1e-9 of the
  // default, the default itself: 1/360 s does not survive 12 digits). A number outside the slider's range gives the
  // range's end and a problem naming the control, the value and the range; a text that is no number, or no option
  // of a choice, gives no value (the default stays) and a problem listing what is allowed.
  fromUrl(text) {
    if (this.kind === 'choice') {
      const option = this.options.find((o) => String(o) === text);
      if (option !== undefined) return {value: option, problem: null};
      return {value: undefined, problem: `${this.label} = ${text} is not one of ${this.labels.join(', ')}; ` +
                                         `kept ${this.show(this.defaultValue)}`};
    }
    const shown = Number(text), unit = this.unit ? ` ${this.unit}` : '';
    if (text.trim() === '' || !Number.isFinite(shown)) {
      return {value: undefined, problem: `${this.label} = ${text} is not a number; kept ${this.show(this.defaultValue)}`};
    }
    if (shown < this.min || shown > this.max) {
      const value = this.clamp(shown * this.scale);
      return {value, problem: `${this.label} = ${text}${unit} is outside ${formatValue(this.min, 'g')} … ` +
                              `${formatValue(this.max, 'g')}${unit}; set to ${this.show(value)}`};
    }
    const value = shown * this.scale, d = this.defaultValue;
    return {value: Math.abs(value - d) <= 1e-9 * Math.abs(d) ? d : value, problem: null};
  }
}

// The description's controls by name, in order.
export function controls(spec) {
  return spec.controls.map((c) => new Control(c, spec.logPositions));
}

// Every control's default (SI), by name.
export function defaults(spec) {
  return Object.fromEntries(controls(spec).map((c) => [c.name, c.defaultValue]));
}

// The book's one style for a number in running text: plain decimals (130°, not 1.3e+02°) up to a million, a power of
// ten written out below 1e-4 (7.4×10⁻⁸ rad), as Python's 'g' formats would otherwise leave them in e notation.
const SUPERSCRIPT = {'-': '⁻', 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹'};
export function plainNumbers(text) {
  return text.replace(/(\d+(?:\.\d+)?)e([+-])(\d+)/g, (all, mantissa, sign, digits) => {
    const exponent = Number(`${sign}${digits}`);
    if (exponent >= 0 && exponent < 6) return String(Number(`${mantissa}e${exponent}`));
    const power = [...String(exponent)].map((ch) => SUPERSCRIPT[ch]).join('');
    return `${mantissa}×10${power}`;
  });
}
