//! The start of Debezium's MySQL/MariaDB connector: what the source will keep its table
//! structures with (`ddl`: the binlog's rows carry no column names, so its DDL, and the
//! schema history topic, describe them). The connector itself is not written yet;
//! `compat/cdc/mysql` is its judge.

pub mod ddl;
