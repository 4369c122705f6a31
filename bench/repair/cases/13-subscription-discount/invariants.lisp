(= (hash-table-count *subscriptions*) 4)
(every (lambda (plan) (plusp (getf *plan-prices* plan))) '(:basic :pro :team))
