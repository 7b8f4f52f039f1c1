-- What the pipeline must end with: per customer, the number of orders and the sum of
-- their items' quantity * unit_price (customers without orders have no row).
SELECT o.customer_id,
       COUNT(DISTINCT o.id) AS orders,
       COALESCE(SUM(i.quantity * i.unit_price), 0) AS total
FROM order_service.orders o
LEFT JOIN order_service.order_items i ON i.order_id = o.id
GROUP BY o.customer_id
ORDER BY o.customer_id;
