//! Combining the watermarks and idleness of an operator's inputs.
//!
//! Follows Flink's `StatusWatermarkValve`:
//! - the operator's watermark is the minimum over its *active, aligned* inputs and never
//!   goes backwards;
//! - an idle input is left out of the minimum, so it does not hold the others back; a
//!   watermark arriving on an idle input is ignored (idle inputs do not send any);
//! - an input that becomes active again with a watermark below the operator's is
//!   *unaligned* and left out until it catches up, so a resuming input cannot stall the
//!   operator either;
//! - when every input is idle the operator becomes idle: it first emits the largest
//!   watermark any input has announced (if above its own), then makes no further progress
//!   until an input becomes active.
//!
//! It is pure bookkeeping: the executor feeds it and acts on what it returns.

/// What the valve asks the operator to emit, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValveOutput {
    Watermark(i64),
    Idle,
    Active,
}

#[derive(Debug, Clone, Copy)]
struct InputStatus {
    watermark: i64,
    idle: bool,
    aligned: bool,
}

#[derive(Debug)]
pub(crate) struct StatusWatermarkValve {
    inputs: Vec<InputStatus>,
    last_output_watermark: i64,
    output_idle: bool,
}

impl StatusWatermarkValve {
    pub(crate) fn new(input_count: usize) -> Self {
        assert!(input_count > 0, "an operator has at least one input");
        Self {
            inputs: vec![
                InputStatus {
                    watermark: i64::MIN,
                    idle: false,
                    aligned: true,
                };
                input_count
            ],
            last_output_watermark: i64::MIN,
            output_idle: false,
        }
    }

    pub(crate) fn input_watermark(
        &mut self,
        input: usize,
        watermark: i64,
        out: &mut Vec<ValveOutput>,
    ) {
        let status = &mut self.inputs[input];
        if status.idle || watermark <= status.watermark {
            return;
        }
        status.watermark = watermark;
        if !status.aligned && watermark >= self.last_output_watermark {
            status.aligned = true;
        }
        self.output_new_minimum(out);
    }

    pub(crate) fn input_idle(&mut self, input: usize, idle: bool, out: &mut Vec<ValveOutput>) {
        let last = self.last_output_watermark;
        let status = &mut self.inputs[input];
        if status.idle == idle {
            return;
        }
        status.idle = idle;
        if idle {
            status.aligned = false;
            if self.inputs.iter().all(|input| input.idle) {
                let max = self.inputs.iter().map(|input| input.watermark).max();
                if let Some(max) = max.filter(|max| *max > last) {
                    self.last_output_watermark = max;
                    out.push(ValveOutput::Watermark(max));
                }
                self.output_idle = true;
                out.push(ValveOutput::Idle);
            } else {
                self.output_new_minimum(out);
            }
        } else {
            status.aligned = status.watermark >= last;
            if self.output_idle {
                self.output_idle = false;
                out.push(ValveOutput::Active);
            }
        }
    }

    fn output_new_minimum(&mut self, out: &mut Vec<ValveOutput>) {
        let minimum = self
            .inputs
            .iter()
            .filter(|input| !input.idle && input.aligned)
            .map(|input| input.watermark)
            .min();
        if let Some(minimum) = minimum.filter(|minimum| *minimum > self.last_output_watermark) {
            self.last_output_watermark = minimum;
            out.push(ValveOutput::Watermark(minimum));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    enum Step {
        Watermark(usize, i64),
        Idle(usize),
        Active(usize),
    }
    use Step::*;

    fn run(inputs: usize, steps: &[Step]) -> Vec<ValveOutput> {
        let mut valve = StatusWatermarkValve::new(inputs);
        let mut out = Vec::new();
        for step in steps {
            match *step {
                Watermark(input, watermark) => valve.input_watermark(input, watermark, &mut out),
                Idle(input) => valve.input_idle(input, true, &mut out),
                Active(input) => valve.input_idle(input, false, &mut out),
            }
        }
        out
    }

    #[test]
    fn valve_cases() {
        use ValveOutput as O;
        let cases: Vec<(&str, usize, Vec<Step>, Vec<ValveOutput>)> = vec![
            (
                "minimum of two",
                2,
                vec![Watermark(0, 10), Watermark(1, 5), Watermark(1, 20)],
                vec![O::Watermark(5), O::Watermark(10)],
            ),
            (
                "never backwards",
                1,
                vec![Watermark(0, 10), Watermark(0, 3)],
                vec![O::Watermark(10)],
            ),
            (
                "idle input ignored",
                2,
                vec![Watermark(0, 10), Idle(1)],
                vec![O::Watermark(10)],
            ),
            (
                "idle then progress",
                2,
                vec![Idle(1), Watermark(0, 7), Watermark(0, 9)],
                vec![O::Watermark(7), O::Watermark(9)],
            ),
            (
                "all idle emits announced max then idle",
                2,
                vec![Watermark(0, 4), Watermark(1, 8), Idle(0), Idle(1)],
                vec![O::Watermark(4), O::Watermark(8), O::Idle],
            ),
            (
                "all idle: no progress, then active",
                2,
                vec![
                    Idle(0),
                    Idle(1),
                    Watermark(0, 50),
                    Active(0),
                    Watermark(0, 60),
                ],
                vec![O::Idle, O::Active, O::Watermark(60)],
            ),
            (
                "resumed lagging input is unaligned",
                2,
                vec![
                    Watermark(0, 10),
                    Watermark(1, 10),
                    Idle(1),
                    Watermark(0, 30),
                    Active(1),
                    Watermark(0, 40),
                    Watermark(1, 35),
                ],
                vec![O::Watermark(10), O::Watermark(30), O::Watermark(40)],
            ),
        ];
        for (name, inputs, steps, expected) in cases {
            assert_eq!(run(inputs, &steps), expected, "{name}");
        }
    }
}
