"""What every public front shares: the pandas (:mod:`kartoframe.api`), dask
(:mod:`kartoframe.dask`) and Spark (:mod:`kartoframe.spark`) fronts declare no keyword,
check no argument and resolve no request of their own.

- :mod:`~kartoframe.front.dataset_signatures`, :mod:`~kartoframe.front.cube_signatures`:
  each public keyword declared once, in groups the fronts adopt
  (:func:`~kartoframe.front.args.same_parameters`);
- :mod:`~kartoframe.front.args`, :mod:`~kartoframe.front.cube_args`: the argument checks;
- :mod:`~kartoframe.front.docs`: the shared numpydoc fragments;
- :mod:`~kartoframe.front.results`, :mod:`~kartoframe.front.metadata`: the values writes
  and reads return;
- the first step every engine's verb takes: :mod:`~kartoframe.front.cube_write`
  (cube writes), :mod:`~kartoframe.front.cube_query` (cube queries),
  :mod:`~kartoframe.front.changes`, :mod:`~kartoframe.front.merge`,
  :mod:`~kartoframe.front.optimize`.
"""
