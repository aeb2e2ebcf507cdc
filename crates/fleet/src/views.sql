-- The views `kairos query` defines over the fleet layout's tables, for the common
-- questions. Each is one SELECT that DataFusion, Spark SQL and DuckDB all read the same
-- way (sums cast to BIGINT, whole minutes by integer remainder, no engine's own
-- functions), so that another engine defines
-- the same views from this file: the text after each `-- view:` block's comments, up to
-- the `;`, registered under the view's name. `host`, `date` and `result` are the layout's
-- partition columns (strings).

-- view: self_functions
-- Self samples and weight of each function in each result: the leaf frame of each sample's stack.
-- needs: samples, stacks, frames, modules
-- order: samples DESC, function
SELECT s.host, s.date, s.result, s.event, f.function, m.path AS module,
       count(*) AS samples, CAST(sum(s.weight) AS BIGINT) AS weight
FROM samples s
JOIN stacks st ON st.host = s.host AND st.date = s.date AND st.result = s.result AND st.id = s.stack
JOIN frames f ON f.host = st.host AND f.date = st.date AND f.result = st.result AND f.id = st.frame
LEFT JOIN modules m ON m.host = f.host AND m.date = f.date AND m.result = f.result AND m.id = f.module
GROUP BY s.host, s.date, s.result, s.event, f.function, m.path;

-- view: top_functions
-- Functions by self samples of the first event over every host and day, and on how many hosts they ran.
-- needs: samples, stacks, frames, modules
-- order: samples DESC, function
SELECT function, module, count(DISTINCT host) AS hosts,
       CAST(sum(samples) AS BIGINT) AS samples, CAST(sum(weight) AS BIGINT) AS weight
FROM self_functions
WHERE event = 0
GROUP BY function, module;

-- view: function_minutes
-- Self samples of each function per host and wall-clock minute (Unix seconds at its start), from the results' clock offsets.
-- needs: samples, stacks, frames, results
-- order: host, minute, samples DESC, function
SELECT s.host,
       CAST((CAST(s.time_ns AS BIGINT) + r.clock_offset_ns
             - (CAST(s.time_ns AS BIGINT) + r.clock_offset_ns) % 60000000000) / 1000000000 AS BIGINT) AS minute,
       f.function, count(*) AS samples
FROM samples s
JOIN results r ON r.host = s.host AND r.date = s.date AND r.result = s.result
JOIN stacks st ON st.host = s.host AND st.date = s.date AND st.result = s.result AND st.id = s.stack
JOIN frames f ON f.host = st.host AND f.date = st.date AND f.result = st.result AND f.id = st.frame
WHERE s.event = 0 AND r.clock_offset_ns IS NOT NULL
GROUP BY s.host,
         CAST((CAST(s.time_ns AS BIGINT) + r.clock_offset_ns
               - (CAST(s.time_ns AS BIGINT) + r.clock_offset_ns) % 60000000000) / 1000000000 AS BIGINT),
         f.function;

-- view: slow_requests
-- Requests slower than their result's threshold (latency results), with their main cause and busiest function.
-- needs: requests
-- order: duration_ns DESC, host, result, id
SELECT host, date, result, CAST(id AS BIGINT) AS id, CAST(tid AS BIGINT) AS tid, thread_name,
       CAST(duration_ns AS BIGINT) AS duration_ns, cause_kind, cause, top_function
FROM requests
WHERE slow;

-- view: slow_requests_by_host
-- Requests, slow requests and the longest one per host (latency results).
-- needs: requests
-- order: slow DESC, host
SELECT host, count(*) AS requests,
       CAST(sum(CASE WHEN slow THEN 1 ELSE 0 END) AS BIGINT) AS slow,
       CAST(max(duration_ns) AS BIGINT) AS max_duration_ns
FROM requests
GROUP BY host;
