-- The order service's tables and the connector's user (the guide's credentials), with
-- Debezium's documented grants (REPLICATION CLIENT is BINLOG MONITOR on MariaDB 10.5+).
-- The server needs log_bin, binlog_format=ROW, binlog_row_image=FULL.
CREATE DATABASE order_service;
CREATE TABLE order_service.orders (
  id INT AUTO_INCREMENT PRIMARY KEY,
  customer_id INT NOT NULL,
  status ENUM('NEW', 'PAID', 'SHIPPED', 'CANCELLED') NOT NULL DEFAULT 'NEW',
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
);
CREATE TABLE order_service.order_items (
  id INT AUTO_INCREMENT PRIMARY KEY,
  order_id INT NOT NULL,
  sku VARCHAR(32) NOT NULL,
  quantity INT NOT NULL,
  unit_price DECIMAL(10, 2) NOT NULL,
  KEY (order_id)
);
CREATE USER 'debezium'@'%' IDENTIFIED BY 'dbz-password';
GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT, LOCK TABLES
  ON *.* TO 'debezium'@'%';
