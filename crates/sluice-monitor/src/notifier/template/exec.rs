//! Running a checked template over one notification's data.
//!
//! Bounded: a render stops with an error past [`OUTPUT_BYTES_MAX`] bytes of output or
//! [`STEPS_MAX`] nodes and loop iterations, so a template with nested ranges over a
//! thousand-partition group cannot stall the notifier or build a message no endpoint
//! would take. A render of Burrow's default templates costs a few allocations per
//! partition (each field read builds its small struct view) and one output string.

use super::TemplateData;
use super::format;
use super::functions::{self, Evaluation};
use super::parse::{Command, Located, Node, Number, Pipeline, Word};
use super::value::Value;
use std::borrow::Cow;

/// Largest rendered message; a webhook body or an email this large is a template bug.
pub(super) const OUTPUT_BYTES_MAX: usize = 1 << 20;
/// Nodes run plus loop iterations, per render.
pub(super) const STEPS_MAX: u64 = 1_000_000;

#[derive(Clone, Copy, PartialEq)]
enum Flow {
    Normal,
    Break,
    Continue,
}

struct Executor<'t, 'a> {
    variables: Vec<(&'t str, Value<'a>)>,
    output: String,
    steps: u64,
}

pub(super) fn execute<'a>(nodes: &[Node], data: &'a TemplateData<'a>) -> Result<String, Located> {
    let root = Value::Root(data);
    let mut executor = Executor {
        variables: vec![("$", root.clone())],
        output: String::new(),
        steps: 0,
    };
    executor.nodes(nodes, &root)?;
    Ok(executor.output)
}

fn at(word: &Word, message: impl std::fmt::Display) -> Located {
    Located::new(word.position(), format!("at <{word}>: {message}"))
}

impl<'t, 'a> Executor<'t, 'a> {
    fn step(&mut self, position: super::parse::Position) -> Result<(), Located> {
        self.steps += 1;
        if self.steps > STEPS_MAX {
            return Err(Located::new(
                position,
                format!("template ran more than {STEPS_MAX} steps"),
            ));
        }
        Ok(())
    }

    fn check_output(&self, position: super::parse::Position) -> Result<(), Located> {
        if self.output.len() > OUTPUT_BYTES_MAX {
            return Err(Located::new(
                position,
                format!("output is larger than {OUTPUT_BYTES_MAX} bytes"),
            ));
        }
        Ok(())
    }

    fn nodes(&mut self, nodes: &'t [Node], dot: &Value<'a>) -> Result<Flow, Located> {
        let mark = self.variables.len();
        let mut flow = Flow::Normal;
        for node in nodes {
            flow = self.node(node, dot)?;
            if flow != Flow::Normal {
                break;
            }
        }
        self.variables.truncate(mark);
        Ok(flow)
    }

    fn node(&mut self, node: &'t Node, dot: &Value<'a>) -> Result<Flow, Located> {
        match node {
            Node::Text(text) => {
                self.output.push_str(text);
                // Text has no position of its own; report the template's start.
                self.check_output(super::parse::Position { line: 1, column: 1 })?;
                Ok(Flow::Normal)
            }
            Node::Action(pipeline) => {
                self.step(pipeline.position)?;
                let value = self.pipeline(pipeline, dot)?;
                if pipeline.variables.is_empty() {
                    format::print_action(&mut self.output, &value);
                    self.check_output(pipeline.position)?;
                } else {
                    self.bind(pipeline, vec![value])?;
                }
                Ok(Flow::Normal)
            }
            Node::If {
                condition,
                then,
                otherwise,
            } => {
                self.step(condition.position)?;
                let mark = self.variables.len();
                let value = self.pipeline(condition, dot)?;
                let truth = value.truth();
                self.bind(condition, vec![value])?;
                let flow = if truth {
                    self.nodes(then, dot)?
                } else {
                    self.nodes(otherwise, dot)?
                };
                self.variables.truncate(mark);
                Ok(flow)
            }
            Node::With {
                pipeline,
                body,
                otherwise,
            } => {
                self.step(pipeline.position)?;
                let mark = self.variables.len();
                let value = self.pipeline(pipeline, dot)?;
                self.bind(pipeline, vec![value.clone()])?;
                let flow = if value.truth() {
                    self.nodes(body, &value)?
                } else {
                    self.nodes(otherwise, dot)?
                };
                self.variables.truncate(mark);
                Ok(flow)
            }
            Node::Range {
                pipeline,
                body,
                otherwise,
            } => {
                self.step(pipeline.position)?;
                let value = self.pipeline(pipeline, dot)?;
                let elements = value.elements().ok_or_else(|| {
                    Located::new(
                        pipeline.position,
                        format!("range can't iterate over {}", value.go_type_name()),
                    )
                })?;
                if elements.is_empty() {
                    return self.nodes(otherwise, dot);
                }
                for (key, element) in elements {
                    self.step(pipeline.position)?;
                    let mark = self.variables.len();
                    match pipeline.variables.len() {
                        0 => {}
                        1 => self.bind(pipeline, vec![element.clone()])?,
                        _ => self.bind(pipeline, vec![key, element.clone()])?,
                    }
                    let flow = self.nodes(body, &element)?;
                    self.variables.truncate(mark);
                    if flow == Flow::Break {
                        break;
                    }
                }
                Ok(Flow::Normal)
            }
            Node::Break => Ok(Flow::Break),
            Node::Continue => Ok(Flow::Continue),
        }
    }

    fn bind(&mut self, pipeline: &'t Pipeline, values: Vec<Value<'a>>) -> Result<(), Located> {
        for (name, value) in pipeline.variables.iter().zip(values) {
            if pipeline.assign {
                let slot = self
                    .variables
                    .iter_mut()
                    .rev()
                    .find(|(known, _)| *known == name.as_str())
                    .ok_or_else(|| {
                        Located::new(pipeline.position, format!("undefined variable {name:?}"))
                    })?;
                slot.1 = value;
            } else {
                self.variables.push((name.as_str(), value));
            }
        }
        Ok(())
    }

    fn variable(&self, word: &Word, name: &str) -> Result<Value<'a>, Located> {
        self.variables
            .iter()
            .rev()
            .find(|(known, _)| *known == name)
            .map(|(_, value)| value.clone())
            .ok_or_else(|| at(word, format!("undefined variable {name:?}")))
    }

    fn pipeline(&mut self, pipeline: &'t Pipeline, dot: &Value<'a>) -> Result<Value<'a>, Located> {
        let mut result = None;
        for command in &pipeline.commands {
            result = Some(self.command(command, dot, result)?);
        }
        Ok(result.unwrap_or(Value::Missing))
    }

    fn command(
        &mut self,
        command: &'t Command,
        dot: &Value<'a>,
        last: Option<Value<'a>>,
    ) -> Result<Value<'a>, Located> {
        let (first, arguments) = command
            .words
            .split_first()
            .ok_or_else(|| Located::new(command.position, "empty command"))?;
        match first {
            Word::Field(_, names) => self.chain(first, dot.clone(), names, arguments, dot, last),
            Word::Chain(_, pipeline, names) => {
                let receiver = self.pipeline(pipeline, dot)?;
                self.chain(first, receiver, names, arguments, dot, last)
            }
            Word::Variable(_, name, names) => {
                let receiver = self.variable(first, name)?;
                if names.is_empty() {
                    return Ok(receiver);
                }
                self.chain(first, receiver, names, arguments, dot, last)
            }
            Word::Function(_, name) => self.call(first, name, arguments, dot, last),
            Word::Nil(_) => Err(at(first, "nil is not a command")),
            other => self.argument(other, dot),
        }
    }

    fn chain(
        &mut self,
        word: &'t Word,
        mut receiver: Value<'a>,
        names: &'t [String],
        arguments: &'t [Word],
        dot: &Value<'a>,
        last: Option<Value<'a>>,
    ) -> Result<Value<'a>, Located> {
        let mut last = last;
        for (position, name) in names.iter().enumerate() {
            let mut values = Vec::new();
            if position + 1 == names.len() {
                for argument in arguments {
                    values.push(self.argument(argument, dot)?);
                }
                values.extend(last.take());
            }
            receiver = match receiver.call_method(name, &values) {
                Some(result) => result.map_err(|message| at(word, message))?,
                None if !values.is_empty() => {
                    return Err(at(
                        word,
                        format!("{name} is not a method but has arguments"),
                    ));
                }
                None => receiver.field(name).map_err(|message| at(word, message))?,
            };
        }
        Ok(receiver)
    }

    fn call(
        &mut self,
        word: &'t Word,
        name: &str,
        arguments: &'t [Word],
        dot: &Value<'a>,
        last: Option<Value<'a>>,
    ) -> Result<Value<'a>, Located> {
        let function = functions::lookup(name)
            .ok_or_else(|| at(word, format!("function {name:?} not defined")))?;
        match function.evaluation {
            Evaluation::ShortCircuit { stop_when } => {
                // Go: `and` returns the first empty argument or the last; `or` the first
                // non-empty one or the last. Later arguments are not evaluated.
                let count = arguments.len() + usize::from(last.is_some());
                let mut result = Value::Missing;
                for (index, argument) in arguments.iter().enumerate() {
                    result = self.argument(argument, dot)?;
                    if index + 1 < count && result.truth() == stop_when {
                        return Ok(result);
                    }
                }
                Ok(last.unwrap_or(result))
            }
            Evaluation::Eager(call) => {
                let mut values = Vec::with_capacity(arguments.len() + 1);
                for argument in arguments {
                    values.push(self.argument(argument, dot)?);
                }
                values.extend(last);
                // Go passes a missing map value to an `interface{}` parameter as nil.
                for value in &mut values {
                    if matches!(value, Value::Missing) {
                        *value = Value::Nil;
                    }
                }
                call(values).map_err(|message| at(word, format!("error calling {name}: {message}")))
            }
        }
    }

    fn argument(&mut self, word: &'t Word, dot: &Value<'a>) -> Result<Value<'a>, Located> {
        Ok(match word {
            Word::Dot(_) => dot.clone(),
            Word::Nil(_) => Value::Nil,
            Word::Bool(_, flag) => Value::Bool(*flag),
            Word::Number(_, number, _) => match number {
                Number::Int(value) => Value::Int(*value),
                Number::Uint(value) => Value::Uint(*value),
                Number::Float(value) => Value::Float64(*value),
            },
            Word::String(_, text) => Value::String(Cow::Owned(text.clone())),
            Word::Field(_, names) => self.chain(word, dot.clone(), names, &[], dot, None)?,
            Word::Variable(_, name, names) => {
                let receiver = self.variable(word, name)?;
                self.chain(word, receiver, names, &[], dot, None)?
            }
            Word::Chain(_, pipeline, names) => {
                let receiver = self.pipeline(pipeline, dot)?;
                self.chain(word, receiver, names, &[], dot, None)?
            }
            Word::Function(_, name) => self.call(word, name, &[], dot, None)?,
            Word::Pipeline(_, pipeline) => self.pipeline(pipeline, dot)?,
        })
    }
}
