# test_quant_model runs tinyfortunes 5 times over (bf16, q8, q4, each fast and scalar): about a minute.
set_tests_properties(cpu/test_quant_model PROPERTIES LABELS "cpu;slow")
