//! The load-time check: walks a parsed template with the static [`Type`] of dot and of
//! every variable, as the executor later walks it with values, and reports what Go would
//! only find while executing: an unknown field (`.Id` where Burrow passes `.ID`), a
//! method or function called with the wrong number or kind of arguments, an undefined
//! variable, a `range` over something that cannot be ranged over.
//!
//! What stays for the render: nil pointers (`.Start.Timestamp` of a partition without
//! commits), a missing map key, an index out of range, and anything typed `Any`.

use super::functions;
use super::parse::{Command, Located, Node, Number, Pipeline, Word};
use super::value::Type;

pub(super) fn check(nodes: &[Node]) -> Result<(), Located> {
    let mut checker = Checker {
        variables: vec![("$".to_string(), Type::Root)],
    };
    checker.nodes(nodes, Type::Root)
}

struct Checker {
    variables: Vec<(String, Type)>,
}

fn at(word: &Word, message: String) -> Located {
    Located::new(word.position(), format!("at <{word}>: {message}"))
}

impl Checker {
    fn nodes(&mut self, nodes: &[Node], dot: Type) -> Result<(), Located> {
        let mark = self.variables.len();
        for node in nodes {
            self.node(node, dot)?;
        }
        self.variables.truncate(mark);
        Ok(())
    }

    fn node(&mut self, node: &Node, dot: Type) -> Result<(), Located> {
        match node {
            Node::Text(_) | Node::Break | Node::Continue => Ok(()),
            Node::Action(pipeline) => {
                let result = self.pipeline(pipeline, dot)?;
                self.bind(pipeline, &[result])
            }
            Node::If {
                condition,
                then,
                otherwise,
            } => {
                let mark = self.variables.len();
                let result = self.pipeline(condition, dot)?;
                self.bind(condition, &[result])?;
                self.nodes(then, dot)?;
                self.nodes(otherwise, dot)?;
                self.variables.truncate(mark);
                Ok(())
            }
            Node::With {
                pipeline,
                body,
                otherwise,
            } => {
                let mark = self.variables.len();
                let result = self.pipeline(pipeline, dot)?;
                self.bind(pipeline, &[result])?;
                self.nodes(body, result)?;
                self.nodes(otherwise, dot)?;
                self.variables.truncate(mark);
                Ok(())
            }
            Node::Range {
                pipeline,
                body,
                otherwise,
            } => {
                let mark = self.variables.len();
                let result = self.pipeline(pipeline, dot)?;
                let (key, element) = match result {
                    Type::Int => (Type::Int, Type::Int),
                    other => other.elements().ok_or_else(|| {
                        Located::new(
                            pipeline.position,
                            format!("range can't iterate over {}", other.go_name()),
                        )
                    })?,
                };
                match pipeline.variables.len() {
                    0 => {}
                    1 => self.bind(pipeline, &[element])?,
                    _ => self.bind(pipeline, &[key, element])?,
                }
                self.nodes(body, element)?;
                self.nodes(otherwise, dot)?;
                self.variables.truncate(mark);
                Ok(())
            }
        }
    }

    /// Declares or assigns the pipeline's variables.
    fn bind(&mut self, pipeline: &Pipeline, types: &[Type]) -> Result<(), Located> {
        for (name, &value_type) in pipeline.variables.iter().zip(types) {
            if pipeline.assign {
                let Some(slot) = self
                    .variables
                    .iter_mut()
                    .rev()
                    .find(|(known, _)| known == name)
                else {
                    return Err(Located::new(
                        pipeline.position,
                        format!("undefined variable {name:?}"),
                    ));
                };
                // Go lets a variable take a value of another type; then nothing is known.
                if slot.1 != value_type {
                    slot.1 = Type::Any;
                }
            } else {
                self.variables.push((name.clone(), value_type));
            }
        }
        Ok(())
    }

    fn variable(&self, word: &Word, name: &str) -> Result<Type, Located> {
        self.variables
            .iter()
            .rev()
            .find(|(known, _)| known == name)
            .map(|(_, variable_type)| *variable_type)
            .ok_or_else(|| Located::new(word.position(), format!("undefined variable {name:?}")))
    }

    fn pipeline(&mut self, pipeline: &Pipeline, dot: Type) -> Result<Type, Located> {
        let mut result = None;
        for command in &pipeline.commands {
            result = Some(self.command(command, dot, result)?);
        }
        // The parser never yields a pipeline without a command.
        Ok(result.unwrap_or(Type::Any))
    }

    fn command(
        &mut self,
        command: &Command,
        dot: Type,
        last: Option<Type>,
    ) -> Result<Type, Located> {
        let (first, arguments) = command
            .words
            .split_first()
            .ok_or_else(|| Located::new(command.position, "empty command"))?;
        match first {
            Word::Field(_, names) => self.chain(first, dot, names, arguments, dot, last),
            Word::Chain(_, pipeline, names) => {
                let receiver = self.pipeline(pipeline, dot)?;
                self.chain(first, receiver, names, arguments, dot, last)
            }
            Word::Variable(_, name, names) => {
                let receiver = self.variable(first, name)?;
                if names.is_empty() {
                    self.not_a_function(first, arguments, last)?;
                    return Ok(receiver);
                }
                self.chain(first, receiver, names, arguments, dot, last)
            }
            Word::Function(_, name) => self.call(first, name, arguments, dot, last),
            Word::Nil(_) => Err(at(first, "nil is not a command".to_string())),
            other => {
                self.not_a_function(other, arguments, last)?;
                self.argument(other, dot)
            }
        }
    }

    fn not_a_function(
        &self,
        word: &Word,
        arguments: &[Word],
        last: Option<Type>,
    ) -> Result<(), Located> {
        if arguments.is_empty() && last.is_none() {
            Ok(())
        } else {
            Err(at(
                word,
                format!("can't give argument to non-function {word}"),
            ))
        }
    }

    /// A field chain; the last name may be a method taking the command's arguments.
    fn chain(
        &mut self,
        word: &Word,
        mut receiver: Type,
        names: &[String],
        arguments: &[Word],
        dot: Type,
        last: Option<Type>,
    ) -> Result<Type, Located> {
        for (position, name) in names.iter().enumerate() {
            let final_name = position + 1 == names.len();
            let mut argument_types = Vec::new();
            if final_name {
                for argument in arguments {
                    argument_types.push(self.argument(argument, dot)?);
                }
                argument_types.extend(last);
            }
            receiver = self.field(word, receiver, name, &argument_types)?;
        }
        Ok(receiver)
    }

    fn field(
        &self,
        word: &Word,
        receiver: Type,
        name: &str,
        arguments: &[Type],
    ) -> Result<Type, Located> {
        if receiver == Type::Any {
            return Ok(Type::Any);
        }
        if let Some((_, parameters, result)) = receiver.method(name) {
            if parameters.len() != arguments.len() {
                return Err(at(
                    word,
                    format!(
                        "wrong number of args for {name}: want {} got {}",
                        parameters.len(),
                        arguments.len()
                    ),
                ));
            }
            for (&parameter, &argument) in parameters.iter().zip(arguments) {
                if argument != Type::Any && argument != parameter {
                    return Err(at(
                        word,
                        format!(
                            "wrong type for value; expected {}; got {}",
                            parameter.go_name(),
                            argument.go_name()
                        ),
                    ));
                }
            }
            return Ok(*result);
        }
        if !arguments.is_empty() {
            return Err(at(
                word,
                format!("{name} is not a method but has arguments"),
            ));
        }
        receiver.field(name).map_err(|message| at(word, message))
    }

    fn call(
        &mut self,
        word: &Word,
        name: &str,
        arguments: &[Word],
        dot: Type,
        last: Option<Type>,
    ) -> Result<Type, Located> {
        let function = functions::lookup(name)
            .ok_or_else(|| at(word, format!("function {name:?} not defined")))?;
        let mut argument_types = Vec::with_capacity(arguments.len() + 1);
        for argument in arguments {
            argument_types.push(self.argument(argument, dot)?);
        }
        argument_types.extend(last);
        (function.check)(&argument_types)
            .map_err(|message| at(word, format!("error calling {name}: {message}")))
    }

    /// The type of a word used as an argument (or alone).
    fn argument(&mut self, word: &Word, dot: Type) -> Result<Type, Located> {
        Ok(match word {
            Word::Dot(_) => dot,
            Word::Nil(_) => Type::Any,
            Word::Bool(_, _) => Type::Bool,
            Word::Number(_, number, _) => match number {
                Number::Int(_) => Type::Int,
                Number::Uint(_) => Type::Uint,
                Number::Float(_) => Type::Float64,
            },
            Word::String(_, _) => Type::String,
            Word::Field(_, names) => self.chain(word, dot, names, &[], dot, None)?,
            Word::Variable(_, name, names) => {
                let receiver = self.variable(word, name)?;
                self.chain(word, receiver, names, &[], dot, None)?
            }
            Word::Chain(_, pipeline, names) => {
                let receiver = self.pipeline(pipeline, dot)?;
                self.chain(word, receiver, names, &[], dot, None)?
            }
            // A function named as an argument is called with no arguments, as in Go.
            Word::Function(_, name) => self.call(word, name, &[], dot, None)?,
            Word::Pipeline(_, pipeline) => self.pipeline(pipeline, dot)?,
        })
    }
}
