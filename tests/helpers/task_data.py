"""Lines in the exact layouts of the task files: GLUE's TSV files (and XNLI's), SWAG's CSV."""

MNLI_TRAIN_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                     "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label")
MNLI_DEV_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                   "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tlabel3\tlabel4\t"
                   "label5\tgold_label")
MNLI_TEST_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                    "sentence1_parse\tsentence2_parse\tsentence1\tsentence2")
XNLI_HEADER = ("language\tgold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
               "sentence2_parse\tsentence1\tsentence2\tpromptID\tpairID\tgenre\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5")
PARSE = "( ( x ) )\t( ( y ) )\t(ROOT x)\t(ROOT y)"
# Real GLUE lines: quotes are ordinary characters (GLUE's files are not quoted), some unbalanced.
GLUE = {
    "CoLA/train.tsv": "gj04\t1\t\tOur friends won't buy this analysis, let alone the next one we propose.\n"
                      "gj04\t0\t*\t\"One more pseudo generalization and I'm giving up.\n",
    "CoLA/dev.tsv": "gj04\t1\t\tThe sailors rode the breeze clear of the rocks.\n",
    "CoLA/test.tsv": "index\tsentence\n0\tBill whistled past the house.\n1\tThe car honked its way down the road.\n",
    "SST-2/train.tsv": "sentence\tlabel\nhide new secretions from the parental units \t0\n\"contains no wit , only "
                       "labored gags \t0\n",
    "SST-2/dev.tsv": "sentence\tlabel\nit 's a charming and often affecting journey . \t1\n",
    "SST-2/test.tsv": "index\tsentence\n0\tuneasy mishmash of styles and genres .\n",
    "MRPC/train.tsv": "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                      "1\t702876\t702977\tAmrozi accused his brother , whom he called \" the witness \" , of "
                      "deliberately distorting his evidence .\tReferring to him as only \" the witness \" , Amrozi "
                      "accused his brother of deliberately distorting his evidence .\n"
                      "0\t2108705\t2108831\tYucaipa owned Dominick 's before selling the chain to Safeway in 1998 "
                      "for $ 2.5 billion .\tYucaipa bought Dominick 's in 1995 for $ 693 million and sold it to "
                      "Safeway for $ 1.8 billion in 1998 .\n",
    "MRPC/dev.tsv": "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1355540\t1355592\tHe said the foodservice "
                    "pie business doesn 't fit .\tThe foodservice pie business does not fit .\n",
    "MRPC/test.tsv": "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n0\t1089874\t1089925\tPCCW 's chief operating "
                     "officer , Mike Butcher , will report .\tCurrent Chief Operating Officer Mike Butcher will "
                     "report .\n",
    "STS-B/train.tsv": "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                       "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane is taking off.\tAn air "
                       "plane is taking off.\t5.000\n1\tmain-captions\tMSRvid\t2012test\t0004\tnone\tnone\tA man "
                       "is playing a large flute.\tA man is playing a flute.\t3.800\n",
    "STS-B/dev.tsv": "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                     "0\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone\tA man with a hard hat is dancing.\tA "
                     "man wearing a hard hat is dancing.\t5.000\n",
    "STS-B/test.tsv": "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\n"
                      "0\tmain-captions\tMSRvid\t2012test\t0024\tnone\tnone\tA girl is styling her hair.\tA girl "
                      "is brushing her hair.\n",
    "QQP/train.tsv": "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n133273\t213221\t213222\tHow is the life "
                     "of a math student? Could you describe your own experiences?\tWhich level of prepration is "
                     "enough for the exam jlpt5?\t0\n",
    "QQP/dev.tsv": "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n201359\t303345\t303346\tWhy are African-"
                   "Americans so beautiful?\tWhy are hispanics so beautiful?\t0\n",
    "QQP/test.tsv": "id\tquestion1\tquestion2\n0\tWhy am I mentally very lonely? How can I solve it?\tFind the "
                    "remainder when [math]23^{24}[/math] is divided by 24,23?\n",
    "MNLI/train.tsv": f"{MNLI_TRAIN_HEADER}\n0\t31193\t31193n\tgovernment\t{PARSE}\tConceptually cream "
                      "skimming has two basic dimensions - product and geography.\tProduct and geography are what "
                      "make cream skimming work. \tneutral\tneutral\n1\t101457\t101457e\ttelephone\t"
                      f"{PARSE}\t\"you know during the season and i guess at at your level uh\tYou lose the things "
                      "to the following level if the people recall.\tentailment\tentailment\n",
    "MNLI/dev_matched.tsv": f"{MNLI_DEV_HEADER}\n0\t63735\t63735n\tslate\t{PARSE}\tThe new rights are nice "
                            "enough\tEveryone really likes the newest benefits \tneutral\tentailment\tneutral\t"
                            "neutral\tneutral\tneutral\n",
    "MNLI/dev_mismatched.tsv": f"{MNLI_DEV_HEADER}\n0\t75290\t75290c\tletters\t{PARSE}\tYour contribution "
                               "helped make it possible.\tYour contributions were of no help.\tcontradiction\t"
                               "contradiction\tcontradiction\tcontradiction\tcontradiction\tcontradiction\n",
    "MNLI/test_matched.tsv": f"{MNLI_TEST_HEADER}\n0\t31493\t31493\ttravel\t{PARSE}\tHierbas, ans seco, ans "
                             "dulce, and frigola are just a few names.\tHierbas is a name worth looking out for.\n",
    "MNLI/test_mismatched.tsv": f"{MNLI_TEST_HEADER}\n0\t75289\t75289\tletters\t{PARSE}\tWhat a Shame\tAnd "
                                "what a shame.\n",
    "QNLI/train.tsv": "index\tquestion\tsentence\tlabel\n0\tWhen did the third Digimon series begin?\tUnlike the "
                      "two seasons before it, it takes place in a fictional universe.\tnot_entailment\n",
    "QNLI/dev.tsv": "index\tquestion\tsentence\tlabel\n0\tWhat came into force after the new constitution was "
                    "herald?\tAs of that day, the new constitution heralding the Second Republic came into "
                    "force.\tentailment\n",
    "QNLI/test.tsv": "index\tquestion\tsentence\n0\tWhat organization is devoted to Jihad against Israel?\tFor "
                     "some decades prior to the First Palestine Intifada, it was devoted to social services.\n",
    "RTE/train.tsv": "index\tsentence1\tsentence2\tlabel\n0\tNo Weapons of Mass Destruction Found in Iraq Yet.\t"
                     "Weapons of Mass Destruction Found in Iraq.\tnot_entailment\n",
    "RTE/dev.tsv": "index\tsentence1\tsentence2\tlabel\n0\tDana Reeve, the widow of the actor, died.\tChristopher "
                   "Reeve had an accident.\tnot_entailment\n",
    "RTE/test.tsv": "index\tsentence1\tsentence2\n0\tMangla was built in 1967.\tMangla Dam was built in 1967.\n",
    "WNLI/train.tsv": "index\tsentence1\tsentence2\tlabel\n0\tI stuck a pin through a carrot. When I pulled the "
                      "pin out, it had a hole.\tThe carrot had a hole.\t1\n",
    "WNLI/dev.tsv": "index\tsentence1\tsentence2\tlabel\n0\tThe drain is clogged with hair. It has to be cleaned."
                    "\tThe hair has to be cleaned.\t0\n",
    "WNLI/test.tsv": "index\tsentence1\tsentence2\n0\tMaude and Dora had seen the trains rushing across the "
                     "prairie.\tHorses ran away when Maude and Dora came into sight.\n",
    "diagnostic/diagnostic.tsv": "index\tsentence1\tsentence2\n0\tThe cat sat on the mat.\tThe cat did not sit "
                                 "on the mat.\n",
    "XNLI/multinli/multinli.train.zh.tsv": "premise\thypo\tlabel\n从 概念 上 看 , 奶油 收入 有 两 个 "
                                           "基本 方面 产品 和 地理 .\t产品 和 地理 是 什么 使 奶油 抹 霜 工作 ."
                                           "\tneutral\n你 知道 在 这个 季节\t你 会 失去 东西\tcontradictory\n",
    "XNLI/xnli.dev.tsv": f"{XNLI_HEADER}\nen\tneutral\ta\tb\tc\td\tHe said, \"Mom, I'm home.\"\tHe didn't say a "
                         "word.\t1\t1\tfacetoface\tneutral\tcontradiction\tcontradiction\tcontradiction\t"
                         "contradiction\nzh\tcontradiction\ta\tb\tc\td\t他 说 , 妈妈 , 我 回来 了 。"
                         "\t他 一句话 也 没 说 。"
                         "\t1\t1\tfacetoface\tcontradiction\tcontradiction\tcontradiction\tcontradiction\t"
                         "contradiction\n",
    "XNLI/xnli.test.tsv": f"{XNLI_HEADER}\nzh\tentailment\ta\tb\tc\td\t嗯 , 我 根本 没 想 过 。\t我 没 想 过 。\t1\t1\t"
                          "facetoface\tentailment\tentailment\tentailment\tentailment\tentailment\n",
}

# Two rows of SWAG's val.csv.
SWAG_HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label\n"
SWAG_ROWS = ('0,anetv_jkn6uvmqwh4,3416,"Members of the procession walk down the street holding small horn brass '
             'instruments. A drum line","Members of the procession walk down the street holding small horn brass '
             'instruments.",A drum line,gold,passes by walking down the street playing their instruments.,has heard '
             'approaching them.,"arrives and they\'re outside dancing and asleep.",turns the lead singer watches the '
             'performance.,0\n'
             '1,lsmdc3001_21_JUMP_STREET-422,11783,He rides the motorcycle down the hall and into the elevator. He,'
             'He rides the motorcycle down the hall and into the elevator.,He,gold,looks at a mirror in the mirror as '
             'he watches someone walk through a door.,"stops, listening to a cup of coffee with the seated woman, '
             'who\'s '
             'standing.",exits the building and rides the motorcycle into a casino where he performs several tricks as '
             'people watch.,pulls the bag out of his pocket and hands it to someone\'s grandma.,2\n')
